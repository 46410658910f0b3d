#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2025, roce-net maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# or Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0.txt), at your option.
# SPDX-License-Identifier: GPL-3.0-or-later OR Apache-2.0
"""Ansible module: the fleet report over many hosts' roce-net snapshots."""

from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: roce_net_fleet
short_description: Compare many hosts' roce-net snapshots and report what only a fleet shows
version_added: 0.1.0
author:
  - roce-net maintainers (!UNKNOWN)
description:
  - Takes the snapshots gathered by M(roce_net.roce.roce_net_facts) on many
    hosts and builds roce-net's fleet report (pure, reads no host) - per-host
    summaries, and findings that need more than one host to see - a peer's
    neighbour entry holding the wrong NIC's MAC for another host's address
    (ARP flux seen from the peer), the same subnet served by different NIC
    counts, MTU differences within a subnet or across hosts, GID index, NIC
    count and subnet layout differences, duplicate addresses.
  - Run it once, on the controller (C(run_once=true), C(delegate_to=localhost)),
    with the C(roce_net) package installed there.
options:
  snapshots:
    description: The snapshots, one per host, in the library's JSON schema
      (the C(roce_net_snapshot) fact).
    type: list
    elements: dict
    required: true
  fail_on:
    description: Fail when a cross-host finding is at least this severe.
    type: str
    choices: [never, warning, error]
    default: never
requirements:
  - roce_net (the roce-net Python package, Python 3.8 or later) on the controller
attributes:
  check_mode:
    support: full
    description: Pure; the same report in check mode.
  diff_mode:
    support: none
    description: Nothing changes.
notes:
  - Always returns C(changed=false).
seealso:
  - module: roce_net.roce.roce_net_facts
"""

EXAMPLES = r"""
- name: Gather facts on every node
  roce_net.roce.roce_net_facts:

- name: Fleet report on the controller
  roce_net.roce.roce_net_fleet:
    snapshots: "{{ ansible_play_hosts | map('extract', hostvars, 'roce_net_snapshot') | list }}"
    fail_on: error
  run_once: true
  delegate_to: localhost
  register: fleet

- name: Show the cross-host findings
  ansible.builtin.debug:
    msg: "{{ item.severity }} {{ item.id }}: {{ item.message }}"
  loop: "{{ fleet.findings }}"
  run_once: true
"""

RETURN = r"""
hosts:
  description: One summary per snapshot (host name, NICs in scope, RDMA devices,
    the host's own finding counts, GID index, MTUs, subnets).
  returned: always
  type: list
  elements: dict
findings:
  description: The cross-host findings (C(fleet-*) ids, docs/checks.md), worst first,
    each with C(id), C(severity), C(subject), C(message), C(evidence) and C(remediation).
  returned: always
  type: list
  elements: dict
summary:
  description: Cross-host findings counted by severity.
  returned: always
  type: dict
  sample: {"error": 1, "warning": 0, "info": 0}
nic_addresses:
  description: Every IPv4 address of every host's NICs in scope, sorted (the
    targets for M(roce_net.roce.roce_net_probe)).
  returned: always
  type: list
  elements: str
  sample: ["198.18.1.11", "198.18.1.12"]
host_findings:
  description: The hosts' own doctor findings counted by severity, added up.
  returned: always
  type: dict
  sample: {"error": 0, "warning": 0, "info": 8}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce_net.roce.plugins.module_utils.common import (
    error_result,
    require_roce_net,
)

SEVERITIES = ("error", "warning", "info")
RANK = dict(info=1, warning=2, error=3)


def count(severities):
    """Counts by severity, every severity present."""
    out = dict((s, 0) for s in SEVERITIES)
    for s in severities:
        out[s] = out.get(s, 0) + 1
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            snapshots=dict(type="list", elements="dict", required=True),
            fail_on=dict(type="str", default="never", choices=["never", "warning", "error"]),
        ),
        supports_check_mode=True,
    )
    rn = require_roce_net(module, "HostState.from_dict", "fleet_report")
    p = module.params
    try:
        states = [rn.HostState.from_dict(s) for s in p["snapshots"]]
        report = rn.fleet_report(states).to_dict()
    except (rn.RoceNetError, ValueError, TypeError) as err:
        module.fail_json(**error_result(err))
    findings = report["findings"]
    addresses = set()
    for summary, snap in zip(report["hosts"], p["snapshots"]):
        nics = set(summary["nics"])
        for a in snap.get("addresses", []):
            if a.get("ifname") in nics and a.get("scope") == "global" and ":" not in str(a.get("address")):
                addresses.add(str(a["address"]))
    host_findings = dict((s, 0) for s in SEVERITIES)
    for h in report["hosts"]:
        for s in SEVERITIES:
            host_findings[s] += int(h["findings"].get(s, 0))
    result = dict(
        changed=False,
        hosts=report["hosts"],
        findings=findings,
        summary=count(f["severity"] for f in findings),
        host_findings=host_findings,
        nic_addresses=sorted(addresses, key=lambda x: tuple(int(o) for o in x.split("."))),
    )
    if p["fail_on"] != "never":
        worst = [f for f in findings if RANK[f["severity"]] >= RANK[p["fail_on"]]]
        if worst:
            result["msg"] = "%d cross-host finding(s) at %s or worse: %s" % (
                len(worst),
                p["fail_on"],
                "; ".join("%s %s" % (f["id"], f["message"]) for f in worst[:5]),
            )
            module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
