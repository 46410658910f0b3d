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
  confirm_timeout:
    description: Roll back on its own unless confirmed within this many seconds
      (use when the change could cut the SSH session). 0 = no confirmation.
    type: int
    default: 0
  persist:
    description: Also write boot-persistent configuration with this backend.
    type: str
    choices: [sysctl.d, rt_tables.d, networkd, netplan, networkmanager, ifupdown]
  persist_root:
    description: Prefix for the persistent files' paths (for staging or tests).
    type: path
    default: /
requirements: [roce_net]
mutually_exclusive: [[policy, policy_file]]
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
  description: Persistent files written (or that would be, in check mode).
  returned: when persist is set
  type: list
"""

import os
import traceback

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

try:
    import roce_net
except ImportError:  # pragma: no cover - exercised on nodes without the wheel
    roce_net = None
    IMPORT_ERROR = traceback.format_exc()
else:
    IMPORT_ERROR = None


def _sysctl_name(s):
    if isinstance(s, dict) and "conf" in s:
        t = s["conf"]["target"]
        target = t["interface"].replace(".", "/") if isinstance(t, dict) else t
        return "net.ipv4.conf.%s.%s" % (target, s["conf"]["key"])
    if isinstance(s, dict) and "tuning" in s:
        return "tuning.%s" % s["tuning"]
    return str(s)


def _route(r):
    out = ["route", r.dst]
    if r.gateway:
        out += ["via", r.gateway]
    if r.dev:
        out += ["dev", r.dev]
    out += ["table", str(r.table)]
    if r.prefsrc:
        out += ["src", r.prefsrc]
    out += ["proto", str(r.protocol)]
    if r.metric is not None:
        out += ["metric", str(r.metric)]
    return " ".join(out)


def _rule(r):
    out = ["rule", "pref", str(r.priority)]
    if r.src:
        out += ["from", r.src]
    if r.dst:
        out += ["to", r.dst]
    if r.iif:
        out += ["iif", r.iif]
    if r.oif:
        out += ["oif", r.oif]
    out += ["lookup", str(r.table), "proto", str(r.protocol)]
    return " ".join(out)


def change_lines(c):
    """(before lines, after lines) of one Change."""
    if c.op == "set_sysctl":
        name = _sysctl_name(c.sysctl)
        before = [] if c.before is None else ["%s = %s" % (name, c.before)]
        return before, ["%s = %s" % (name, c.after)]
    if c.op == "add_route":
        return [], [_route(c.route)]
    if c.op == "delete_route":
        return [_route(c.route)], []
    if c.op == "replace_route":
        return [_route(c.before)], [_route(c.after)]
    if c.op == "add_rule":
        return [], [_rule(c.rule)]
    if c.op == "delete_rule":
        return [_rule(c.rule)], []
    if c.op == "flush_neighbors":
        return ["neigh %s dev %s lladdr %s" % (n.ip, n.ifname, n.mac) for n in c.entries or ()], []
    if c.op == "register_table_name":
        before = [] if c.before is None else ["table %d %s" % (c.id, c.before)]
        return before, ["table %d %s" % (c.id, c.name)]
    d = c.to_dict()
    return [], ["%s %s" % (c.op, d)]


def describe(c):
    before, after = change_lines(c)
    return "%s: %s" % (c.op, "; ".join(["- " + b for b in before] + ["+ " + a for a in after]))


def plan_diff(plan):
    before, after = [], []
    for c in plan.changes:
        b, a = change_lines(c)
        before += b
        after += a
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


def persist(module, plan, backend, root, check):
    """Write the rendered persistent files; return [{path, changed}]."""
    files = roce_net.render_persistence(plan, backend)
    out = []
    for f in files:
        path = os.path.join(root, f.path.lstrip("/"))
        try:
            with open(path) as fh:
                old = fh.read()
        except OSError:
            old = None
        changed = old != f.content
        if changed and not check:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = path + ".roce-net.tmp"
            with open(tmp, "w") as fh:
                fh.write(f.content)
            os.replace(tmp, path)
        out.append(dict(path=path, changed=changed))
    return out


def error_result(e, **extra):
    return dict(
        msg=str(e),
        kind=getattr(e, "kind", None),
        errno=getattr(e, "errno", None),
        extack=getattr(e, "extack", None),
        **extra,
    )


def main():
    module = AnsibleModule(
        argument_spec=dict(
            policy=dict(type="dict"),
            policy_file=dict(type="path"),
            netns=dict(type="str"),
            sysfs_root=dict(type="path"),
            confirm_timeout=dict(type="int", default=0),
            persist=dict(
                type="str",
                choices=["sysctl.d", "rt_tables.d", "networkd", "netplan", "networkmanager", "ifupdown"],
            ),
            persist_root=dict(type="path", default="/"),
        ),
        mutually_exclusive=[["policy", "policy_file"]],
        required_one_of=[["policy", "policy_file"]],
        supports_check_mode=True,
    )
    if roce_net is None:
        module.fail_json(msg=missing_required_lib("roce_net"), exception=IMPORT_ERROR)
    p = module.params
    missing = [n for n in ("Policy", "plan") if not hasattr(roce_net, n)]
    if not module.check_mode and not hasattr(roce_net.Host, "apply"):
        missing.append("Host.apply")
    if p["persist"] and not hasattr(roce_net, "render_persistence"):
        missing.append("render_persistence")
    if missing:
        module.fail_json(
            msg="this roce_net (%s) lacks %s; install a newer wheel"
            % (roce_net.__version__, ", ".join(missing))
        )
    result = dict(changed=False)
    try:
        policy = load_policy(module)
        host = roce_net.Host(netns=p["netns"], sysfs_root=p["sysfs_root"])
        state = host.snapshot()
        plan = roce_net.plan(state, policy)
        result["plan"] = plan.to_dict()
        result["changes"] = [describe(c) for c in plan.changes]
        result["changed"] = not plan.is_empty()
        if module._diff:
            result["diff"] = plan_diff(plan)
        if not plan.is_empty() and not module.check_mode:
            timeout = p["confirm_timeout"] or None
            report = host.apply(plan, confirm_timeout=timeout)
            result["applied"] = report.to_dict() if hasattr(report, "to_dict") else report
        if p["persist"]:
            written = persist(module, plan, p["persist"], p["persist_root"], module.check_mode)
            result["persisted"] = written
            result["changed"] = result["changed"] or any(w["changed"] for w in written)
    except roce_net.RoceNetError as e:
        module.fail_json(**error_result(e, **result))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
