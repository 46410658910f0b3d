#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2025, roce-net maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# or Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0.txt), at your option.
# SPDX-License-Identifier: GPL-3.0-or-later OR Apache-2.0
"""Ansible module: ARP-probe the fleet's addresses from every NIC in scope."""

from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: roce_net_probe
short_description: ARP-probe peer addresses from every RoCE NIC and report ARP flux on the wire
version_added: 0.1.0
author:
  - roce-net maintainers (!UNKNOWN)
description:
  - Sends ARP requests for each target address from each NIC in scope (as
    roce-net's scope picks them), each with that NIC's own address and MAC as
    the sender, and collects every MAC that answers. More than one MAC for a
    target is ARP flux on the peer (it answers from NICs that do not own the
    address).
  - Each request also teaches the peer the right MAC for the sender's address
    (Linux updates the neighbour entry of the sender of an ARP request for one
    of its own addresses), so a probe round after fixing ARP everywhere replaces
    the wrong entries peers learned before the fix.
  - Changes no configuration; needs C(CAP_NET_RAW) (root).
options:
  netns:
    description: Named network namespace to probe from; default is Ansible's own.
    type: str
  sysfs_root:
    description: Read RDMA devices (which decide the NICs in scope) from this sysfs root.
    type: path
  etc_root:
    description: Read routing table names under this directory instead of C(/etc).
    type: path
  targets:
    description: IPv4 addresses to probe; the node's own addresses are skipped.
    type: list
    elements: str
    required: true
  interfaces:
    description: NICs to probe from; default the NICs in scope. A name that does
      not exist or has no global IPv4 address fails the task, as does having no
      interface to probe from at all.
    type: list
    elements: str
  count:
    description: ARP requests per target and NIC.
    type: int
    default: 1
  timeout:
    description: Seconds to listen for answers per target and NIC.
    type: float
    default: 0.3
  fail_on_flux:
    description: Fail when any target is answered by more than one MAC.
    type: bool
    default: true
requirements:
  - roce_net (the roce-net Python package, Python 3.8 or later)
attributes:
  check_mode:
    support: full
    description: Probes in check mode too (it reads the wire and changes no configuration).
  diff_mode:
    support: none
    description: Nothing changes.
notes:
  - Always returns C(changed=false).
  - Targets a NIC has no route to on its link go unanswered; that is counted, not failed.
seealso:
  - module: roce_net.roce.roce_net_fleet
"""

EXAMPLES = r"""
- name: Probe every fleet address from every NIC, fail on ARP flux
  roce_net.roce.roce_net_probe:
    targets: "{{ fleet.nic_addresses }}"
  become: true
"""

RETURN = r"""
probes:
  description: One entry per NIC and target, with the MACs that answered.
  returned: always
  type: list
  elements: dict
  sample: [{"interface": "r0", "source": "198.18.1.11", "target": "198.18.2.11", "macs": ["02:00:00:00:02:10"]}]
flux:
  description: The probes answered by more than one MAC.
  returned: always
  type: list
  elements: dict
answered:
  description: Probes that got at least one answer.
  returned: always
  type: int
unanswered:
  description: Probes that got none.
  returned: always
  type: int
"""

import ipaddress
from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce_net.roce.plugins.module_utils.common import (
    HOST_ARGS,
    U32_MAX,
    check_int_ranges,
    error_result,
    host_from_params,
    require_roce_net,
)


def sources(state, names):
    """(interface, its first global IPv4 address) for each named interface that has one."""
    out = []
    for name in names:
        for a in state.addresses:
            if a.ifname == name and a.scope == "global" and ipaddress.ip_address(str(a.address)).version == 4:
                out.append((name, str(a.address)))
                break
    return out


def main():
    argument_spec = dict(HOST_ARGS)
    argument_spec.update(
        targets=dict(type="list", elements="str", required=True),
        interfaces=dict(type="list", elements="str"),
        count=dict(type="int", default=1),
        timeout=dict(type="float", default=0.3),
        fail_on_flux=dict(type="bool", default=True),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    rn = require_roce_net(module, "Host.probe_arp", "fleet_report")
    p = module.params
    # count is the binding's u32 (roce-net-py/src/host.rs, Host.probe_arp).
    check_int_ranges(module, p, dict(count=(1, U32_MAX)))
    try:
        targets = sorted(set(str(ipaddress.IPv4Address(t)) for t in p["targets"]))
    except ValueError as err:
        module.fail_json(msg="targets: %s" % err)
    try:
        host = host_from_params(p)
        state = host.snapshot()
        names = p["interfaces"] or list(rn.fleet_report([state]).hosts[0].nics)
        found = sources(state, names)
        if p["interfaces"]:
            # A name given by hand that cannot be probed from is a mistake to
            # report, not a probe that silently passes.
            have = sorted(i.name for i in state.interfaces)
            usable = set(pair[0] for pair in found)
            for name in p["interfaces"]:
                if name not in have:
                    module.fail_json(msg="interfaces: %s does not exist here (interfaces: %s)" % (name, ", ".join(have)))
                if name not in usable:
                    module.fail_json(msg="interfaces: %s has no global IPv4 address to probe from" % name)
        if not found:
            module.fail_json(
                msg="no interface to probe from: no NIC in scope has a global IPv4 address here; "
                "name them in interfaces"
            )
        local = set(str(a.address) for a in state.addresses)
        jobs = [(dev, src, t) for dev, src in found for t in targets if t not in local]
        if not jobs:
            module.warn("every target is an address of this host: nothing was probed")

        def probe(job):
            dev, src, target = job
            r = host.probe_arp(dev, target, count=p["count"], timeout=p["timeout"], source=src)
            return dict(interface=dev, source=src, target=target, macs=[str(x.mac) for x in r.replies])

        with ThreadPoolExecutor(max_workers=16) as pool:
            probes = list(pool.map(probe, jobs))
    except rn.RoceNetError as err:
        module.fail_json(**error_result(err))
    flux = [x for x in probes if len(x["macs"]) > 1]
    answered = sum(1 for x in probes if x["macs"])
    result = dict(
        changed=False,
        probes=probes,
        flux=flux,
        answered=answered,
        unanswered=len(probes) - answered,
    )
    if flux and p["fail_on_flux"]:
        result["msg"] = "ARP flux: %s" % "; ".join(
            "%s answered by %s (probed from %s)" % (x["target"], ", ".join(x["macs"]), x["interface"]) for x in flux[:5]
        )
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
