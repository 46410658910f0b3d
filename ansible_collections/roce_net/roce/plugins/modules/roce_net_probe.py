#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2025, roce-net maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# or Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0.txt), at your option.
# SPDX-License-Identifier: GPL-3.0-or-later OR Apache-2.0
"""Ansible module: ARP- and ND-probe the fleet's addresses from every NIC in scope."""

from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: roce_net_probe
short_description: ARP- or ND-probe peer addresses from every RoCE NIC and report ARP flux on the wire
version_added: 0.1.0
author:
  - roce-net maintainers (!UNKNOWN)
description:
  - Sends ARP requests for each target address from each NIC in scope (as
    roce-net's scope picks them), each with that NIC's own address and MAC as
    the sender, and collects every MAC that answers. More than one MAC for a
    target is ARP flux on the peer (it answers from NICs that do not own the
    address).
  - An IPv6 target is probed the same way with neighbour solicitations (IPv6's
    ARP, as C(roce-net probe nd)), from each NIC's own global IPv6 address; more
    than one MAC advertised for it is a NIC of the peer answering for an address
    that is not its own (proxy ND, or the address on two NICs). Each target's
    family picks the probe.
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
    description: IPv4 and IPv6 addresses to probe (ARP for IPv4, neighbour
      solicitations for IPv6; not IPv6 link-local ones, which name no rail); the
      node's own addresses are skipped.
    type: list
    elements: str
    required: true
  interfaces:
    description: NICs to probe from; default the NICs in scope. A name that does
      not exist, or has no global address of a family some target has (IPv4,
      IPv6), fails the task, as does having no interface to probe a family's
      targets from at all.
    type: list
    elements: str
  count:
    description: ARP requests or neighbour solicitations per target and NIC.
    type: int
    default: 1
  timeout:
    description: Seconds to listen for answers per target and NIC.
    type: float
    default: 0.3
  fail_on_flux:
    description: Fail when any target is answered by more than one MAC (ARP
      flux for IPv4; for IPv6 a second NIC answering for the address).
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

- name: Who answers for the peers' IPv6 rail addresses (neighbour solicitations)
  roce_net.roce.roce_net_probe:
    targets: [fd00:198:18::100, fd00:198:18::101]
  become: true
"""

RETURN = r"""
probes:
  description: One entry per NIC and target, with the MACs that answered and
    the probe (C(arp) for an IPv4 target, C(nd) for an IPv6 one).
  returned: always
  type: list
  elements: dict
  sample: [{"interface": "r0", "source": "198.18.1.11", "target": "198.18.2.11", "probe": "arp", "macs": ["02:00:00:00:02:10"]}]
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


#: The probe of each address family, and what its name says in messages.
PROBES = {4: ("arp", "IPv4"), 6: ("nd", "IPv6")}


def sources(state, names):
    """(interface, family, its first usable global address of that family) for
    each named interface and family it has one of."""
    out = []
    for name in names:
        seen = set()
        for a in state.addresses:
            if a.ifname != name or a.scope != "global":
                continue
            if "tentative" in a.flags or "dadfailed" in a.flags:
                continue
            version = ipaddress.ip_address(str(a.address)).version
            if version not in seen:
                seen.add(version)
                out.append((name, version, str(a.address)))
    return out


def parse_targets(module, raw):
    """The targets as sorted strings, each with its family; link-local IPv6
    addresses (no rail's) and anything not an address fail the task."""
    targets = []
    for t in raw:
        try:
            a = ipaddress.ip_address(t.strip())
        except ValueError as err:
            module.fail_json(msg="targets: %s" % err)
        if a.version == 6 and a.is_link_local:
            module.fail_json(
                msg="targets: %s is IPv6 link-local, on every link at once: probe the rails' global or ULA addresses" % a
            )
        targets.append((a.version, str(a)))
    return sorted(set(targets))


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
    # count is the binding's u32 (roce-net-py/src/host.rs, Host.probe_arp, Host.probe_nd).
    check_int_ranges(module, p, dict(count=(1, U32_MAX)))
    targets = parse_targets(module, p["targets"])
    families = sorted(set(pair[0] for pair in targets))
    if 6 in families:
        # Only IPv6 targets need the ND probe: an older wheel still probes IPv4.
        require_roce_net(module, "Host.probe_nd")
    try:
        host = host_from_params(p)
        state = host.snapshot()
        names = p["interfaces"] or list(rn.fleet_report([state]).hosts[0].nics)
        found = sources(state, names)
        if p["interfaces"]:
            # A name given by hand that cannot be probed from is a mistake to
            # report, not a probe that silently passes.
            have = sorted(i.name for i in state.interfaces)
            usable = set((pair[0], pair[1]) for pair in found)
            for name in p["interfaces"]:
                if name not in have:
                    module.fail_json(msg="interfaces: %s does not exist here (interfaces: %s)" % (name, ", ".join(have)))
                for v in families:
                    if (name, v) not in usable:
                        module.fail_json(
                            msg="interfaces: %s has no global %s address to probe from" % (name, PROBES[v][1])
                        )
        for v in families:
            if not any(pair[1] == v for pair in found):
                module.fail_json(
                    msg="no interface to probe %s targets from: no NIC in scope has a global %s address here; "
                    "name them in interfaces" % (PROBES[v][1], PROBES[v][1])
                )
        local = set(str(a.address) for a in state.addresses)
        jobs = [(dev, v, src, t) for dev, v, src in found for tv, t in targets if tv == v and t not in local]
        if not jobs:
            module.warn("every target is an address of this host: nothing was probed")

        def probe(job):
            dev, version, src, target = job
            call = host.probe_arp if version == 4 else host.probe_nd
            r = call(dev, target, count=p["count"], timeout=p["timeout"], source=src)
            return dict(
                interface=dev,
                source=src,
                target=target,
                probe=PROBES[version][0],
                macs=[str(x.mac) for x in r.replies],
            )

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
        what = {"arp": "ARP flux", "nd": "several MACs answer neighbour solicitations"}
        parts = []
        for kind in ("arp", "nd"):
            these = [x for x in flux if x["probe"] == kind]
            if these:
                parts.append(
                    "%s: %s"
                    % (
                        what[kind],
                        "; ".join(
                            "%s answered by %s (probed from %s)" % (x["target"], ", ".join(x["macs"]), x["interface"])
                            for x in these[:5]
                        ),
                    )
                )
        result["msg"] = " / ".join(parts)
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
