#!/usr/bin/python
# Apache-2.0
"""Ansible module: gather roce-net facts (snapshot and doctor findings)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: roce_net_facts
short_description: Snapshot a host's RoCE/RDMA networking and diagnose it with roce-net
description:
  - Reads links, addresses, neighbours, routes, rules, sysctls and RDMA GID tables
    of one network namespace with the roce_net Python package, and runs the
    doctor checks over the snapshot. Changes nothing.
  - Needs the roce_net wheel installed for the interpreter Ansible uses on the
    managed node (see README.md).
options:
  netns:
    description: Named network namespace (C(/run/netns/NAME)); default is the
      namespace Ansible runs in.
    type: str
  sysfs_root:
    description: Read RDMA devices from this sysfs root instead of C(/sys).
    type: path
  etc_root:
    description: Read routing table names under this directory instead of C(/etc).
    type: path
  snapshot:
    description: Include the whole snapshot in the facts (it can be large).
    type: bool
    default: true
requirements: [roce_net]
"""

RETURN = r"""
ansible_facts:
  description: C(roce_net_snapshot) (the snapshot as the library's JSON schema)
    and C(roce_net_findings) (doctor findings; absent when this roce_net has no doctor).
  returned: always
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


def error_result(e):
    """A RoceNetError as fail_json arguments."""
    return dict(
        msg=str(e),
        kind=getattr(e, "kind", None),
        errno=getattr(e, "errno", None),
        extack=getattr(e, "extack", None),
    )


def main():
    module = AnsibleModule(
        argument_spec=dict(
            netns=dict(type="str"),
            sysfs_root=dict(type="path"),
            etc_root=dict(type="path"),
            snapshot=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    if roce_net is None:
        module.fail_json(msg=missing_required_lib("roce_net"), exception=IMPORT_ERROR)
    p = module.params
    try:
        host = roce_net.Host(netns=p["netns"], sysfs_root=p["sysfs_root"], etc_root=p["etc_root"])
        state = host.snapshot()
        facts = {}
        if p["snapshot"]:
            facts["roce_net_snapshot"] = state.to_dict()
        doctor = getattr(roce_net, "doctor", None)
        if doctor is not None:
            facts["roce_net_findings"] = [f.to_dict() for f in doctor(state)]
    except roce_net.RoceNetError as e:
        module.fail_json(**error_result(e))
    module.exit_json(changed=False, ansible_facts=facts)


if __name__ == "__main__":
    main()
