#!/usr/bin/python
# Apache-2.0
"""Ansible module: bring a host's RoCE networking to a roce-net policy."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: roce_net
short_description: Plan and apply a roce-net policy (ARP, policy routing, rp_filter, neighbours)
description:
  - Snapshots one network namespace, plans the changes that make it comply with
    the policy, and applies them as a transaction (journal, verify, rollback on
    failure). A second run with the same policy reports C(changed=false).
  - Check mode returns the plan and C(changed) (whether the plan has changes)
    and touches nothing. Diff mode returns the plan as before/after text.
options:
  policy:
    description: The policy as a dict (the YAML/JSON policy document).
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
      - C(applied) plans and applies the policy.
      - C(confirmed) confirms an apply made with I(confirm_timeout) (run it after
        checking the node is still reachable); C(rolled_back) undoes the last
        apply from its journal. Both report C(changed=false) when there is
        nothing to confirm or undo.
    type: str
    choices: [applied, confirmed, rolled_back]
    default: applied
  confirm_timeout:
    description: Roll back on its own unless confirmed within this many seconds
      (use when the change could cut the SSH session; confirm with
      I(state=confirmed)). 0 = no confirmation.
    type: int
    default: 0
  persist:
    description: Also write boot-persistent configuration with this backend.
    type: str
    choices: [sysctl.d, rt_tables.d, networkd, netplan, networkmanager, ifupdown]
  persist_root:
    description: Prefix for the persistent files' paths (for staging or tests);
      the directory must exist.
    type: path
    default: /
requirements: [roce_net]
notes:
  - One of I(policy) / I(policy_file) is required with I(state=applied).
"""

RETURN = r"""
plan:
  description: The plan (the library's plan JSON schema).
  returned: always
  type: dict
changes:
  description: One line per planned change.
  returned: always
  type: list
applied:
  description: The apply report (not in check mode, not when nothing to do).
  returned: when applied
  type: dict
persisted:
  description: The write report (written, unchanged, backups, per-file unified
    diffs); in check mode what would be written.
  returned: when persist is set
  type: dict
"""

import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

try:
    import roce_net
except ImportError:  # pragma: no cover - exercised on nodes without the wheel
    roce_net = None
    IMPORT_ERROR = traceback.format_exc()
else:
    IMPORT_ERROR = None


def split_diff(text):
    """The library's plan diff (``+`` add, ``-`` delete, ``~ old -> new``) as
    (before lines, after lines) for Ansible's before/after diff."""
    before, after = [], []
    for line in text.splitlines():
        mark, _, rest = line.partition(" ")
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
    before, after = split_diff(plan.render_diff())
    where = plan.netns or "current namespace"
    return dict(
        before_header="%s (%s): now" % (plan.hostname, where),
        after_header="%s (%s): after apply" % (plan.hostname, where),
        before="".join(x + "\n" for x in before),
        after="".join(x + "\n" for x in after),
    )


def load_policy(module):
    p = module.params
    if p["policy"] is not None:
        return roce_net.Policy.from_dict(p["policy"])
    if p["policy_file"]:
        path = p["policy_file"]
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            module.fail_json(msg="cannot read policy_file %s: %s" % (path, e))
        if path.endswith(".json"):
            return roce_net.Policy.from_json(text)
        return roce_net.Policy.from_yaml(text)
    module.fail_json(msg="give policy or policy_file")


def persist(plan, state, backend, root, check):
    """Render onto the node's own configuration under root (discovered from it and
    the host's state) and write (or, in check mode, only compare) the files."""
    files = roce_net.render_persistence(plan, backend, root=root, state=state)
    report = roce_net.write_persistence(files, root, dry_run=check)
    return report.to_dict()


def error_result(e, **extra):
    return dict(
        msg=str(e),
        kind=getattr(e, "kind", None),
        errno=getattr(e, "errno", None),
        extack=getattr(e, "extack", None),
        **extra,
    )


def finish_pending(module, p):
    """state=confirmed / rolled_back: settle the last apply of the namespace."""
    host = roce_net.Host(netns=p["netns"], sysfs_root=p["sysfs_root"], etc_root=p["etc_root"])
    try:
        if module.check_mode:
            module.exit_json(changed=True, msg="would %s the last apply" % p["state"])
        if p["state"] == "confirmed":
            host.confirm(state_dir=p["state_dir"])
            module.exit_json(changed=True, msg="apply confirmed")
        report = host.rollback(state_dir=p["state_dir"])
        module.exit_json(changed=True, rolled_back=report.to_dict())
    except roce_net.NotFoundError as e:
        # Nothing pending / nothing to roll back: already in the requested state.
        module.exit_json(changed=False, msg=str(e))
    except roce_net.RoceNetError as e:
        module.fail_json(**error_result(e))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            policy=dict(type="dict"),
            policy_file=dict(type="path"),
            netns=dict(type="str"),
            sysfs_root=dict(type="path"),
            etc_root=dict(type="path"),
            state_dir=dict(type="path"),
            confirm_timeout=dict(type="int", default=0),
            persist=dict(
                type="str",
                choices=["sysctl.d", "rt_tables.d", "networkd", "netplan", "networkmanager", "ifupdown"],
            ),
            persist_root=dict(type="path", default="/"),
            state=dict(type="str", default="applied", choices=["applied", "confirmed", "rolled_back"]),
        ),
        mutually_exclusive=[["policy", "policy_file"]],
        required_if=[["state", "applied", ["policy", "policy_file"], True]],
        supports_check_mode=True,
    )
    if roce_net is None:
        module.fail_json(msg=missing_required_lib("roce_net"), exception=IMPORT_ERROR)
    p = module.params
    missing = [n for n in ("Policy", "plan") if not hasattr(roce_net, n)]
    if not module.check_mode and not hasattr(roce_net.Host, "apply"):
        missing.append("Host.apply")
    if p["persist"] and not hasattr(roce_net, "write_persistence"):
        missing.append("write_persistence")
    if missing:
        module.fail_json(
            msg="this roce_net (%s) lacks %s; install a newer wheel"
            % (roce_net.__version__, ", ".join(missing))
        )
    result = dict(changed=False)
    if p["state"] != "applied":
        finish_pending(module, p)
    try:
        policy = load_policy(module)
        host = roce_net.Host(netns=p["netns"], sysfs_root=p["sysfs_root"], etc_root=p["etc_root"])
        state = host.snapshot()
        plan = roce_net.plan(state, policy)
        result["plan"] = plan.to_dict()
        result["changes"] = list(plan.describe())
        result["changed"] = not plan.is_empty()
        if module._diff:
            result["diff"] = plan_diff(plan)
        if not plan.is_empty() and not module.check_mode:
            timeout = p["confirm_timeout"] or None
            report = host.apply(plan, confirm_timeout=timeout, state_dir=p["state_dir"])
            result["applied"] = report.to_dict() if hasattr(report, "to_dict") else report
        if p["persist"]:
            report = persist(plan, state, p["persist"], p["persist_root"], module.check_mode)
            result["persisted"] = report
            result["changed"] = result["changed"] or bool(report["written"])
    except roce_net.RoceNetError as e:
        module.fail_json(**error_result(e, **result))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
