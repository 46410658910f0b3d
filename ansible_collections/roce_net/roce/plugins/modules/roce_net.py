#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2025, roce-net maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# or Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0.txt), at your option.
# SPDX-License-Identifier: GPL-3.0-or-later OR Apache-2.0
"""Ansible module: bring a host's RoCE networking to a roce-net policy."""

from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: roce_net
short_description: Plan and apply a roce-net policy (ARP, policy routing, rp_filter, neighbours)
version_added: 0.1.0
author:
  - roce-net maintainers (!UNKNOWN)
description:
  - Snapshots one network namespace, plans the changes that make it comply with
    the policy, and applies them as a transaction (journal, verify, rollback on
    failure). A second run with the same policy reports C(changed=false).
  - Check mode returns the plan and C(changed) (whether the plan has changes)
    and touches nothing. Diff mode returns the plan as before/after text and,
    with O(persist), a unified diff of each persistent file to be written.
  - With O(persist), the persistent configuration is rendered before anything
    is applied, so a backend that does not configure the NICs fails the task
    with the host untouched.
  - Nothing is persisted for a change that is not confirmed. O(persist) together
    with O(confirm_timeout) fails the task before anything changes; put
    O(persist) on the O(state=confirmed) task instead, which writes the files
    only once it has confirmed the apply (see the examples). O(persist) is also
    refused while an earlier apply of the namespace awaits confirmation or did
    not finish. A failed task reports C(changed=true) only when
    something was applied or written before the failure.
  - O(state=confirmed) and O(state=rolled_back) settle the last apply of the
    namespace from its journal; in check mode they report exactly what the
    real run would (C(changed) is whether there is something to confirm or undo).
  - What O(persist) writes for a kept apply is recorded in O(state_dir) (as
    C(roce-net persist) does), so rolling that apply back (O(state=rolled_back),
    the confirm watchdog, C(roce-net rollback)) also puts the boot files back
    as they were; the next boot does not bring the change back.
options:
  policy:
    description: The policy as a dict (the YAML/JSON policy document, docs/policy.md).
    type: dict
  policy_file:
    description: A policy file (C(.json), else YAML) on the managed node.
    type: path
  netns:
    description: Named network namespace to work in; default is Ansible's own.
    type: str
  sysfs_root:
    description: Read RDMA devices from this sysfs root instead of C(/sys).
    type: path
  etc_root:
    description: Read and write routing table names under this directory instead
      of C(/etc) (staging, tests).
    type: path
  state_dir:
    description: Where apply keeps its lock and journal (default C(/run/roce-net)).
    type: path
  state:
    description:
      - V(applied) plans and applies the policy.
      - V(confirmed) confirms an apply made with O(confirm_timeout) (run it after
        checking the node is still reachable).
      - V(rolled_back) undoes the last apply from its journal, and puts back
        the files O(persist) wrote for it.
      - V(confirmed) and V(rolled_back) report C(changed=false) when there is
        nothing to confirm or undo.
    type: str
    choices: [applied, confirmed, rolled_back]
    default: applied
  confirm_timeout:
    description: Roll back on its own unless confirmed within this many seconds
      (use when the change could cut the SSH session; confirm with
      O(state=confirmed)). V(0) means no confirmation. Not together with
      O(persist) (persist on the confirming task).
    type: int
    default: 0
  persist:
    description:
      - Also write boot-persistent configuration with this backend.
      - With O(state=applied), after the apply; refused with O(confirm_timeout)
        and while an apply of the namespace awaits confirmation.
      - With O(state=confirmed), after the confirmation (or when the last apply
        is already kept); needs O(policy) or O(policy_file) (the same as the
        applying task) and writes nothing when the last apply was rolled back
        or did not finish.
      - Not with O(state=rolled_back).
    type: str
    choices: [sysctl.d, rt_tables.d, networkd, netplan, networkmanager, ifupdown]
  persist_root:
    description: The node's root (for staging or tests); its own network
      configuration is read there to find which file or profile configures each
      NIC, and roce-net's files are written there. The directory must exist.
    type: path
    default: /
requirements:
  - roce_net (the roce-net Python package, Python 3.8 or later)
attributes:
  check_mode:
    support: full
    description: Every state reports in check mode the C(changed) the real run would.
  diff_mode:
    support: full
    description: With O(state=applied), the plan as before/after lines, and
      with O(persist) each persistent file that changes as a unified diff.
  platform:
    platforms: posix
    support: full
    description: Linux only.
notes:
  - One of O(policy) / O(policy_file) is required with O(state=applied).
  - Changing networking needs root (C(become=true)).
seealso:
  - module: roce_net.roce.roce_net_facts
"""

EXAMPLES = r"""
- name: Apply the policy shipped with the playbook
  roce_net.roce.roce_net:
    policy: "{{ lookup('ansible.builtin.file', 'policy.yml') | from_yaml }}"
  become: true

- name: Apply a policy kept on the node, and persist it for boot with systemd-networkd
  roce_net.roce.roce_net:
    policy_file: /etc/roce-net/policy.yml
    persist: networkd
  become: true

# Remote nodes whose SSH session could be cut by a routing mistake:
- name: Apply, rolling back by itself unless confirmed within 120 s
  roce_net.roce.roce_net:
    policy_file: /etc/roce-net/policy.yml
    confirm_timeout: 120
  become: true

- name: Still reachable?
  ansible.builtin.wait_for_connection:
    timeout: 60

- name: Keep the change
  roce_net.roce.roce_net:
    state: confirmed
  become: true
# The same, persisted for boot only once confirmed (persist is refused on the
# task with confirm_timeout: the watchdog would undo the change live, and the
# next boot would bring it back):
- name: Apply, rolling back by itself unless confirmed within 120 s
  roce_net.roce.roce_net:
    policy_file: /etc/roce-net/policy.yml
    confirm_timeout: 120
  become: true
- name: Still reachable?
  ansible.builtin.wait_for_connection:
    timeout: 60
- name: Keep the change, then persist it for boot with systemd-networkd
  roce_net.roce.roce_net:
    state: confirmed
    policy_file: /etc/roce-net/policy.yml
    persist: networkd
  become: true
"""

RETURN = r"""
plan:
  description: The plan, as the JSON C(roce-net plan -o) writes (docs/cli.md).
  returned: when O(state=applied)
  type: dict
  sample: {"hostname": "gpu01", "netns": null, "changes": []}
changes:
  description: One line per planned change.
  returned: when O(state=applied)
  type: list
  elements: str
  sample: ["sysctl net.ipv4.conf.all.arp_ignore 0 -> 1"]
applied:
  description: The apply report.
  returned: when O(state=applied), not in check mode, and the plan was not empty
  type: dict
persisted:
  description: The write report (written, unchanged, backups, per-file unified
    diffs); in check mode what would be written.
  returned: when O(persist) is set with O(state=applied), or with
    O(state=confirmed) once the apply is confirmed or already kept
  type: dict
persisted_stale:
  description: Files of an earlier persistence that this one does not write,
    removed (put back) or kept, with why.
  returned: same as RV(persisted)
  type: dict
persisted_record:
  description: The file in O(state_dir) recording what O(persist) changed for the
    last apply, from which a rollback of that apply puts the files back;
    V(null) when nothing was recorded (check mode, no kept apply, nothing changed).
  returned: same as RV(persisted)
  type: str
journal_state:
  description: Where the last apply of the namespace stood before this run
    (C(applying), C(pending_confirm), C(committed), C(rolled_back),
    C(rollback_failed)), or V(null) when there is no journal.
  returned: when O(state=confirmed) or O(state=rolled_back)
  type: str
  sample: pending_confirm
rolled_back:
  description: The rollback report (what was undone; C(restored_files), the
    boot files put back that O(persist) wrote for the apply).
  returned: when O(state=rolled_back), not in check mode, and something was rolled back
  type: dict
msg:
  description: What was done, or why nothing was.
  returned: when O(state=confirmed) or O(state=rolled_back)
  type: str
  sample: apply confirmed
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce_net.roce.plugins.module_utils.common import (
    HOST_ARGS,
    error_result,
    host_from_params,
    require_roce_net,
)

BACKENDS = ["sysctl.d", "rt_tables.d", "networkd", "netplan", "networkmanager", "ifupdown"]


def split_diff(text):
    """The library's plan diff (``+`` add, ``-`` delete, ``~ old -> new``) as
    (before lines, after lines) for Ansible's before/after diff."""
    before, after = [], []
    for line in text.splitlines():
        mark, dummy, rest = line.partition(" ")
        if mark == "+":
            after.append(rest)
        elif mark == "-":
            before.append(rest)
        elif mark == "~" and " -> " in rest:
            old, new = rest.rsplit(" -> ", 1)
            old_w, new_w = old.split(" "), new.split(" ")
            before.append(old)
            after.append(" ".join(old_w[: max(len(old_w) - len(new_w), 0)] + new_w))
        elif line.strip():
            after.append(line)
    return before, after


def plan_diff(plan):
    """Ansible's diff dict for a plan."""
    before, after = split_diff(plan.render_diff())
    where = plan.netns or "current namespace"
    return dict(
        before_header="%s (%s): now" % (plan.hostname, where),
        after_header="%s (%s): after apply" % (plan.hostname, where),
        before="".join(x + "\n" for x in before),
        after="".join(x + "\n" for x in after),
    )


def file_diff(d):
    """Ansible's diff dict for one persistent file (roce-net's unified diff)."""
    return dict(prepared=d.diff)


def would_change(state, journal_state):
    """Whether O(state=confirmed) / O(state=rolled_back) changes anything, given
    where the last apply stands (``None``: no journal). This is what
    roce_net.confirm / roce_net.rollback do: confirm acts only on an apply
    awaiting confirmation; rollback on any journal not already rolled back."""
    if journal_state is None:
        return False
    if state == "confirmed":
        return journal_state == "pending_confirm"
    return journal_state != "rolled_back"


def load_policy(module, rn):
    """The policy from O(policy) or O(policy_file)."""
    p = module.params
    if p["policy"] is not None:
        return rn.Policy.from_dict(p["policy"])
    path = p["policy_file"]
    try:
        with open(path) as f:
            text = f.read()
    except OSError as err:
        module.fail_json(msg="cannot read policy_file %s: %s" % (path, err))
    if path.endswith(".json"):
        return rn.Policy.from_json(text)
    return rn.Policy.from_yaml(text)


# Journal states after which the live state is the kept apply (or no apply
# was ever made), so the confirming task may persist it.
SETTLED_KEPT = (None, "committed")
# Journal states in which an apply is not settled: nothing is persisted.
UNSETTLED = ("applying", "pending_confirm", "rolling_back")


def persist_plan(module, host, plan, result, diffs):
    """Write O(persist) for the plan's desired state (a dry run in check mode),
    recorded for the last apply when it is kept so that its rollback puts the
    files back; whether a file changed."""
    p = module.params
    done = host.persist_for_apply(
        plan, p["persist"], root=p["persist_root"], state_dir=p["state_dir"], dry_run=module.check_mode
    )
    result["persisted"] = done.report.to_dict()
    result["persisted_stale"] = done.stale.to_dict()
    result["persisted_record"] = done.recorded
    if module._diff:
        diffs += [file_diff(d) for d in done.report.diffs if d.status != "unchanged"]
    return bool(done.report.written or done.stale.removed or done.stale.restored)


def write_persist(module, rn, host, result, diffs):
    """Render O(persist) from the policy onto the live state and write it (a dry
    run in check mode); whether a file changed."""
    plan = rn.plan(host.snapshot(), load_policy(module, rn))
    return persist_plan(module, host, plan, result, diffs)


def settle(module, rn):
    """O(state=confirmed) / O(state=rolled_back): settle the last apply; with
    O(persist) (confirmed only), persist once the apply is kept."""
    p = module.params
    host = host_from_params(p)
    persist = bool(p["persist"])
    diffs = []
    try:
        journal = host.apply_status(state_dir=p["state_dir"])
        journal_state = None if journal is None else journal.get("state")
        result = dict(journal_state=journal_state)
        changed = would_change(p["state"], journal_state)
        what = "confirm" if p["state"] == "confirmed" else "roll back"
        if not changed:
            msg = "nothing to %s (the last apply is %s)" % (what, journal_state or "absent")
            if not persist:
                module.exit_json(changed=False, msg=msg, **result)
            if journal_state not in SETTLED_KEPT:
                module.fail_json(
                    changed=False,
                    msg="nothing persisted: the last apply is %s, not kept (a change that is not "
                    "confirmed is never persisted); apply the policy again, confirm it, then persist"
                    % journal_state,
                    **result
                )
        elif module.check_mode:
            msg = "would %s the last apply" % what
        elif p["state"] == "confirmed":
            host.confirm(state_dir=p["state_dir"])
            msg = "apply confirmed"
        else:
            report = host.rollback(state_dir=p["state_dir"])
            module.exit_json(changed=True, msg="last apply rolled back", rolled_back=report.to_dict(), **result)
        if persist:
            # Only here: the apply is confirmed (or would be, in check mode), or
            # the last one is already kept.
            written = write_persist(module, rn, host, result, diffs)
            changed = changed or written
            msg += "; persisted with %s" % p["persist"] if written else "; persisted files unchanged"
        if diffs:
            result["diff"] = diffs if len(diffs) > 1 else diffs[0]
        module.exit_json(changed=changed, msg=msg, **result)
    except rn.NotFoundError as err:
        # Settled by the watchdog or another run since the journal was read.
        if persist:
            module.fail_json(changed=False, msg="%s; nothing persisted" % err, journal_state=None)
        module.exit_json(changed=False, msg=str(err), journal_state=None)
    except rn.RoceNetError as err:
        module.fail_json(**error_result(err))


def main():
    argument_spec = dict(HOST_ARGS)
    argument_spec.update(
        policy=dict(type="dict"),
        policy_file=dict(type="path"),
        state_dir=dict(type="path"),
        confirm_timeout=dict(type="int", default=0),
        persist=dict(type="str", choices=BACKENDS),
        persist_root=dict(type="path", default="/"),
        state=dict(type="str", default="applied", choices=["applied", "confirmed", "rolled_back"]),
    )
    module = AnsibleModule(
        argument_spec=argument_spec,
        mutually_exclusive=[["policy", "policy_file"]],
        required_if=[["state", "applied", ["policy", "policy_file"], True]],
        supports_check_mode=True,
    )
    p = module.params
    if p["persist"] and p["state"] == "rolled_back":
        module.fail_json(changed=False, msg="persist is not taken with state=rolled_back (the rollback puts back "
                         "what persist wrote for the apply it undoes)")
    if p["persist"] and p["state"] == "confirmed" and p["policy"] is None and p["policy_file"] is None:
        module.fail_json(changed=False, msg="persist with state=confirmed needs policy or policy_file (the policy "
                         "the confirmed apply applied)")
    if p["persist"] and p["confirm_timeout"]:
        module.fail_json(
            changed=False,
            msg="persist with confirm_timeout would write the boot configuration before the change is "
            "confirmed, so a change the watchdog rolls back would come back at the next boot; apply "
            "with confirm_timeout here and give persist (with the same policy) to the state=confirmed "
            "task, which persists after confirming"
        )
    if p["state"] != "applied":
        calls = ["Host.apply_status", "Host.confirm", "Host.rollback"]
        if p["persist"]:
            calls += ["Policy", "plan", "Host.snapshot", "Host.persist_for_apply"]
        settle(module, require_roce_net(module, *calls))
    calls = ["Policy", "plan", "Host.snapshot", "Host.apply_status"]
    if not module.check_mode:
        calls.append("Host.apply")
    if p["persist"]:
        calls += ["render_persistence", "Host.persist_for_apply"]
    rn = require_roce_net(module, *calls)
    # The library checks confirm_timeout's range before it changes anything.
    timeout = p["confirm_timeout"]
    # `changed` says what this run did (check mode: would do), also when it
    # fails: nothing until the apply or the write has happened.
    result = dict(changed=False)
    try:
        policy = load_policy(module, rn)
        host = host_from_params(p)
        state = host.snapshot()
        plan = rn.plan(state, policy)
        result["plan"] = plan.to_dict()
        result["changes"] = list(plan.describe())
        diffs = [plan_diff(plan)] if module._diff else []
        if p["persist"]:
            # Nothing is persisted for an apply that is not settled (one an
            # earlier task made with confirm_timeout awaits confirmation).
            journal = host.apply_status(state_dir=p["state_dir"])
            if journal is not None and journal.get("state") in UNSETTLED:
                module.fail_json(
                    msg="nothing persisted: the last apply of this namespace is %s; confirm it "
                    "(state=confirmed, with persist there) or roll it back first" % journal.get("state"),
                    **result
                )
            # Rendered before anything is applied: a backend that does not
            # configure these NICs fails the task with the host untouched. Onto
            # the node's own configuration under persist_root (roce-net never
            # defines an interface the node does not; see docs/persistence.md).
            rn.render_persistence(plan, p["persist"], root=p["persist_root"], state=state)
        if module.check_mode:
            result["changed"] = not plan.is_empty()
        elif not plan.is_empty():
            report = host.apply(plan, confirm_timeout=timeout or None, state_dir=p["state_dir"])
            result["applied"] = report.to_dict()
            result["changed"] = True
        if p["persist"]:
            # Recorded for the apply just made (when it is kept), so that
            # state=rolled_back puts the files back.
            written = persist_plan(module, host, plan, result, diffs)
            result["changed"] = result["changed"] or written
        if diffs:
            result["diff"] = diffs if len(diffs) > 1 else diffs[0]
    except rn.RoceNetError as err:
        module.fail_json(**error_result(err, **result))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
