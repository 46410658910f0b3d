#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2025, roce-net maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# or Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0.txt), at your option.
# SPDX-License-Identifier: GPL-3.0-or-later OR Apache-2.0
"""Ansible module: gather roce-net facts (snapshot and doctor findings)."""

from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: roce_net_facts
short_description: Snapshot a host's RoCE/RDMA networking and diagnose it with roce-net
version_added: 0.1.0
author:
  - roce-net maintainers (!UNKNOWN)
description:
  - Reads links, addresses, neighbours, routes, rules, sysctls and RDMA GID tables
    of one network namespace with the roce_net Python package, and runs the
    doctor checks over the snapshot. Changes nothing.
  - Needs the roce_net wheel installed for the interpreter Ansible uses on the
    managed node (the P(roce_net.roce.install#role) role does that).
options:
  netns:
    description: Named network namespace (C(/run/netns/NAME)) to read; default is
      the namespace Ansible runs in.
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
requirements:
  - roce_net (the roce-net Python package, Python 3.8 or later)
attributes:
  check_mode:
    support: full
    description: Reads only; the same facts in check mode.
  diff_mode:
    support: none
    description: Nothing changes, so there is no diff.
  facts:
    support: full
    description: Sets C(roce_net_snapshot) and C(roce_net_findings).
notes:
  - Always returns C(changed=false).
seealso:
  - module: roce_net.roce.roce_net
  - module: roce_net.roce.roce_net_fleet
"""

EXAMPLES = r"""
- name: Gather roce-net facts
  roce_net.roce.roce_net_facts:

- name: Findings only, for a namespace on the node
  roce_net.roce.roce_net_facts:
    netns: gpu0
    snapshot: false

- name: Report the errors
  ansible.builtin.debug:
    msg: "{{ item.id }}: {{ item.message }}"
  loop: "{{ roce_net_findings | selectattr('severity', 'eq', 'error') }}"
"""

RETURN = r"""
ansible_facts:
  description: The facts set on the host.
  returned: always
  type: dict
  contains:
    roce_net_snapshot:
      description: The snapshot in the library's JSON schema (the section
        Snapshot schema of docs/cli.md), including C(hostname), C(netns), C(interfaces), C(addresses),
        C(neighbors), C(routes), C(rules), C(sysctls) and C(rdma).
      returned: when O(snapshot=true)
      type: dict
      sample: {"schema_version": 1, "hostname": "gpu01", "netns": null}
    roce_net_findings:
      description: Doctor findings, worst first.
      returned: always
      type: list
      elements: dict
      contains:
        id:
          description: Check id (docs/checks.md).
          type: str
          returned: always
          sample: arp-ignore
        severity:
          description: C(error), C(warning) or C(info).
          type: str
          returned: always
          sample: error
        subject:
          description: What the finding is about (interface, device, address).
          type: dict
          returned: always
        message:
          description: One sentence saying what is wrong and why it matters.
          type: str
          returned: always
        evidence:
          description: The values the check saw.
          type: dict
          returned: always
        remediation:
          description: The fix as commands and as a policy snippet.
          type: dict
          returned: always
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce_net.roce.plugins.module_utils.common import (
    HOST_ARGS,
    error_result,
    host_from_params,
    require_roce_net,
)


def main():
    argument_spec = dict(HOST_ARGS)
    argument_spec.update(snapshot=dict(type="bool", default=True))
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    rn = require_roce_net(module, "Host", "doctor")
    p = module.params
    try:
        state = host_from_params(p).snapshot()
        facts = dict(roce_net_findings=[f.to_dict() for f in rn.doctor(state)])
        if p["snapshot"]:
            facts["roce_net_snapshot"] = state.to_dict()
    except rn.RoceNetError as err:
        module.fail_json(**error_result(err))
    module.exit_json(changed=False, ansible_facts=facts)


if __name__ == "__main__":
    main()
