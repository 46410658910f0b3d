#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, roce-net maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# or Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0.txt), at your option.
# SPDX-License-Identifier: GPL-3.0-or-later OR Apache-2.0
"""Ansible module: one step of the cluster mesh (roce-net mesh node, plan, run, report)."""

from __future__ import absolute_import, annotations, division, print_function

DOCUMENTATION = r"""
---
module: roce_net_mesh
short_description: One step of roce-net's cluster mesh - every NIC of every node probed on its rail, the broken element named
version_added: 0.1.0
author:
  - roce-net maintainers (!UNKNOWN)
description:
  - The four steps of C(roce-net mesh) (docs/mesh.md in the roce-net sources), one per
    C(step), run as C(examples/ansible/mesh.yml) runs them.
  - C(step=node) on every node - its entry of the inventory (its NICs in scope
    with an address, MAC, MTU and rail), from a snapshot; reads only.
  - C(step=plan) once - the schedule over every node's entry, round 1
    C(start_in) seconds from now, with a fresh token; pure.
  - C(step=run) on every node - this node's part of the plan - a responder on
    every NIC and its probes in the plan's time slots (ARP, the IP echo, RDMA
    where both NICs back RDMA ports); returns when its last slot has ended. Run
    it on every node at once (C(async) with C(poll=0), then
    M(ansible.builtin.async_status)), within C(start_in) of the plan. Needs
    C(CAP_NET_RAW) (root). In check mode it sends nothing and returns what it
    would probe and answer.
  - C(step=report) once - the merge of every node's result - the verdict and
    one fault per broken element (C(nic), C(host), C(rail) or C(pair)), each
    with its cause, evidence, fix and the host's doctor findings; pure.
options:
  step:
    description: Which step to run.
    type: str
    required: true
    choices: [node, plan, run, report]
  netns:
    description: (C(node), C(run)) Named network namespace to run in; default is Ansible's own.
    type: str
  sysfs_root:
    description:
      - (C(node), C(run)) Read RDMA devices from this sysfs root instead of C(/sys)
        (C(roce-net --sysfs-root)); C(run)'s RDMA level selects its ports from it,
        as M(roce_net.roce.roce_net_rdma_probe) does.
    type: path
  libibverbs:
    description:
      - (C(run)) The RDMA level loads libibverbs from this soname or path instead of
        C(libibverbs.so.1) (C(roce-net mesh run --libibverbs)), for its probes and its
        responder, as M(roce_net.roce.roce_net_rdma_probe) does. A library that does
        not load is a note of the result, and the node's RDMA probes are skipped.
    type: path
  etc_root:
    description: (C(node), C(run)) Read routing table names under this directory instead of C(/etc).
    type: path
  rail_by:
    description:
      - (C(node), C(plan)) How NICs are grouped into rails - C(auto) (a NIC's
        subnet, plus its position among the host's NICs of that subnet when
        several share it), C(subnet) or C(index).
    type: str
    default: auto
    choices: [auto, subnet, index]
  family:
    description: (C(node), C(plan)) Probe each NIC on its address of this family
      (default IPv4, or IPv6 for a NIC without IPv4).
    type: str
    choices: [ipv4, ipv6]
  nics:
    description:
      - (C(node)) NICs the entry lists besides those in scope, with or without an
        address (the node's rails; C(roce-net mesh node --nic)). One without an
        address is in the entry's C(unprobed) and the report names it
        (C(no-address), C(link-down), C(absent)). Without it, a host without
        RDMA devices adds the links that look like its NICs in scope, have no
        address and are administratively up; with it, nothing is guessed.
    type: list
    elements: str
  nodes:
    description:
      - (C(plan)) Every node's entry - the C(node) return value of C(step=node),
        or a snapshot. A node missing here is never probed.
    type: list
    elements: dict
  peers:
    description: (C(plan)) Peers each NIC probes per round (1 to 16).
    type: int
    default: 2
  rounds:
    description: (C(plan)) Rounds (1 to 64).
    type: int
    default: 3
  all_pairs:
    description: (C(plan)) Probe every pair of each rail (small clusters).
    type: bool
    default: false
  intra_host:
    description: (C(plan)) Probe each host's RDMA NICs among themselves.
    type: bool
    default: true
  rotation:
    description: (C(plan)) Another rotation probes other pairs, the same one the same pairs.
    type: int
    default: 0
  levels:
    description: (C(plan)) The levels to probe.
    type: list
    elements: str
    choices: [neighbor, ip, rdma]
    default: [neighbor, ip, rdma]
  port:
    description: (C(plan)) UDP port of the IP echo on every NIC; the RDMA exchanges use TCP C(port + 1).
    type: int
    default: 18530
  start_in:
    description: (C(plan)) Round 1 starts this many seconds after the plan is made (0 to 3600);
      give the time it takes to start C(step=run) on every node.
    type: float
    default: 15
  neighbor_ms:
    description: (C(plan)) Neighbour level - how long each probe listens, ms.
    type: int
    default: 1000
  ip_ms:
    description: (C(plan)) IP level - each echo's bound, ms.
    type: int
    default: 1000
  rdma_ms:
    description: (C(plan)) RDMA level - each probe's bound, ms.
    type: int
    default: 10000
  rdma_size:
    description: (C(plan)) RDMA level - bytes per RDMA write.
    type: int
    default: 65536
  rdma_iterations:
    description: (C(plan)) RDMA level - RDMA writes each way.
    type: int
    default: 4
  rdma_latency_iterations:
    description: (C(plan)) RDMA level - send/recv round trips.
    type: int
    default: 16
  plan:
    description:
      - (C(run), C(report)) The plan - the C(plan) return value of C(step=plan).
        C(run) also takes one node's part of it.
    type: dict
  node:
    description: (C(run)) This node's name in the plan (default - its host name,
      C(hostname:netns) in a network namespace, as C(step=node) named it).
    type: str
  results:
    description:
      - (C(report)) Every node's run by host - the registered result of
        C(step=run) (directly or through M(ansible.builtin.async_status)), or
        its C(result). Failed, skipped and empty results are left out - the
        report names those nodes C(host ... no-result).
    type: dict
requirements:
  - roce_net (the roce-net Python package, Python 3.8 or later)
attributes:
  check_mode:
    support: full
    description: C(run) sends nothing and returns what it would probe and
      answer (RV(would_probe)); C(node), C(plan) and C(report) are pure or read-only
      and run as usual (a report of check-mode runs has the verdict C(check_mode)).
  diff_mode:
    support: none
    description: Nothing changes.
notes:
  - Always returns C(changed=false); C(report) never fails because of the
    verdict (assert on RV(passed), as C(examples/ansible/mesh.yml) does).
  - The plan holds the run's token - responders answer only probes that carry
    it - so keep a saved plan private.
seealso:
  - module: roce_net.roce.roce_net_rdma_probe
  - module: roce_net.roce.roce_net_fleet
"""

EXAMPLES = r"""
- name: This node's entry
  roce_net.roce.roce_net_mesh:
    step: node
  register: mesh_node

- name: The plan, once
  roce_net.roce.roce_net_mesh:
    step: plan
    nodes: "{{ ansible_play_hosts | map('extract', hostvars, ['mesh_node', 'node']) | list }}"
    levels: [neighbor, ip]
  run_once: true
  register: mesh_plan

- name: Every node's part at once
  roce_net.roce.roce_net_mesh:
    step: run
    plan: "{{ mesh_plan.plan }}"
  async: "{{ (mesh_plan.ends_in + 60) | int }}"
  poll: 0
  register: mesh_job

- name: The merged report
  roce_net.roce.roce_net_mesh:
    step: report
    plan: "{{ mesh_plan.plan }}"
    results: "{{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars) | map(attribute='mesh_run', default={}))) }}"
  run_once: true
  register: mesh_report
"""

RETURN = r"""
node:
  description: (C(node)) This node's inventory entry - C(host) (its name in the plan), C(nics)
    (C(name), C(address), C(prefix_len), C(mac), C(mtu), C(rail), C(rdma)) and, when some
    NICs in scope have no address, C(unprobed) (C(name), C(cause), C(rail), C(rdma), C(seen),
    C(addresses)).
  returned: step=node
  type: dict
plan:
  description: (C(plan)) The plan - C(version), C(id), C(options) (with the token and start time) and C(inventory).
  returned: step=plan
  type: dict
id:
  description: (C(plan), C(run), C(report)) The plan's id - the pairs it probes.
  returned: success
  type: str
  sample: 2b61381ff140c43f
ends_in:
  description: (C(plan)) Seconds from now until the last node's responder stops at the latest
    (the bound of C(step=run)).
  returned: step=plan
  type: int
  sample: 44
summary:
  description: (C(plan)) C(nodes), C(nics), C(rails), C(probes); (C(report)) the report's counts.
  returned: step=plan or step=report
  type: dict
result:
  description: (C(run)) This node's result - C(host), C(nics) as it saw them, C(findings),
    C(probes) (each level's C(status), C(cause), C(evidence), C(fix)), C(responder), C(notes).
  returned: step=run, not in check mode
  type: dict
would_probe:
  description: (C(run)) The probes this node makes, one line each - round, NIC, peer, levels.
  returned: step=run
  type: list
  elements: str
  sample: ["round 1: r0 -> h2:rnt-ex-h2 r0 (198.18.2.11) neighbor,ip"]
would_answer:
  description: (C(run)) How many probes this node's responder answers.
  returned: step=run
  type: int
report:
  description: (C(report)) The merged report, as C(roce-net mesh report --json) writes it.
  returned: step=report
  type: dict
faults:
  description:
    - (C(report)) One per broken element - C(element) (C(host), C(rail), C(nic), C(pair)),
      C(host), C(nic), C(rail), C(peer), C(cause), C(level), C(message), C(evidence), C(fix), C(findings).
  returned: step=report
  type: list
  elements: dict
  sample: [{"element": "nic", "host": "gpu7", "nic": "r1", "cause": "link-down",
            "fix": ["ssh gpu7 ip link show dev r1", "check the cable, the transceiver and the switch port of gpu7 r1"]}]
table:
  description: (C(report)) The verdict line, then one line per fault.
  returned: step=report
  type: list
  elements: str
  sample: ["fail: 1 fault(s): nic gpu7 r1 link-down", "nic gpu7 r1 link-down: gpu7 r1: its link is down (...)"]
verdict:
  description: (C(report)) C(pass), C(fail) or C(check_mode) (the runs were check-mode ones).
  returned: step=report
  type: str
passed:
  description: (C(report)) The verdict is C(pass).
  returned: step=report
  type: bool
msg:
  description: What the step did, or the verdict in one line.
  returned: always
  type: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.roce_net.roce.plugins.module_utils.common import (
    HOST_ARGS,
    U16_MAX,
    U32_MAX,
    check_int_ranges,
    error_result,
    host_from_params,
    require_roce_net,
)

#: The plan's options and their (lowest, highest) the binding takes; the
#: library checks the narrower ranges itself and names them.
PLAN_LIMITS = dict(
    peers=(0, U32_MAX),
    rounds=(0, U32_MAX),
    rotation=(0, U32_MAX),
    port=(0, U16_MAX),
    neighbor_ms=(0, (1 << 64) - 1),
    ip_ms=(0, (1 << 64) - 1),
    rdma_ms=(0, (1 << 64) - 1),
    rdma_size=(0, U32_MAX),
    rdma_iterations=(0, U32_MAX),
    rdma_latency_iterations=(0, U32_MAX),
)


def levels_of(levels):
    return ",".join(n for n in ("neighbor", "ip", "rdma") if levels.get(n))


def schedule_lines(schedule):
    """What a node's part would probe, one line per probe (as ``mesh run --check``)."""
    out = []
    for p in schedule["outgoing"]:
        out.append(
            "round %d: %s -> %s %s (%s) %s%s"
            % (
                p["round"] + 1,
                p["from"]["name"],
                p["to_host"],
                p["to"]["name"],
                p["to"]["address"],
                levels_of(p["levels"]),
                " (intra-host)" if p["intra"] else "",
            )
        )
    return out


def run_result(reg):
    """A node's run from its registered result: the module's own return, an
    async_status one, or the result itself; None when there is none."""
    if not isinstance(reg, dict) or not reg:
        return None
    if reg.get("failed") or reg.get("skipped") or reg.get("unreachable"):
        return None
    if isinstance(reg.get("result"), dict):
        return reg["result"]
    if "probes" in reg and "plan" in reg:
        return reg
    return None


def step_node(module, rn, p):
    state = host_from_params(p).snapshot()
    node = rn.mesh_node(state, rail_by=p["rail_by"], family=p["family"], nics=p["nics"]).to_dict()
    msg = "%s: %d NIC(s) on rails %s" % (node["host"], len(node["nics"]), ", ".join(sorted(set(n["rail"] for n in node["nics"]))))
    unprobed = node.get("unprobed") or []
    if unprobed:
        msg += "; not probed, no address: %s" % ", ".join("%s (%s)" % (u["name"], u["cause"]) for u in unprobed)
    module.exit_json(changed=False, node=node, msg=msg)


def step_plan(module, rn, p):
    if not p["nodes"]:
        module.fail_json(msg="nodes: give every node's entry (step=node's return value 'node')")
    check_int_ranges(module, p, PLAN_LIMITS)
    plan = rn.mesh_plan(
        p["nodes"], peers=p["peers"], rounds=p["rounds"], all_pairs=p["all_pairs"],
        intra_host=p["intra_host"], rotation=p["rotation"], levels=p["levels"], port=p["port"],
        start_in=p["start_in"], neighbor_ms=p["neighbor_ms"], ip_ms=p["ip_ms"],
        rdma_ms=p["rdma_ms"], rdma_size=p["rdma_size"], rdma_iterations=p["rdma_iterations"],
        rdma_latency_iterations=p["rdma_latency_iterations"], rail_by=p["rail_by"], family=p["family"],
    )
    parts = rn.mesh_node_plans(plan)
    end = max(x.schedule.end_at_ms for x in parts)
    ends_in = max(0, int((end - time.time() * 1000) / 1000.0 + 0.999))
    nics = [n for node in plan.inventory.nodes for n in node.nics]
    summary = dict(
        nodes=len(plan.inventory.nodes),
        nics=len(nics),
        rails=len(set(n.rail for n in nics)),
        probes=sum(len(x.schedule.outgoing) for x in parts),
    )
    module.exit_json(
        changed=False, plan=plan.to_dict(), id=plan.id, ends_in=ends_in, summary=summary,
        msg="mesh plan %s: %d node(s), %d NIC(s) on %d rail(s), %d probe(s); round 1 in %.0f s"
        % (plan.id, summary["nodes"], summary["nics"], summary["rails"], summary["probes"], p["start_in"]),
    )


def step_run(module, rn, p):
    if not p["plan"]:
        module.fail_json(msg="plan: give the plan (step=plan's return value 'plan')")
    host = host_from_params(p)
    name = p["node"]
    if name is None:
        name = rn.mesh_node(host.snapshot()).host
    part = rn.mesh_node_plan(p["plan"], name).to_dict()
    lines = schedule_lines(part["schedule"])
    answer = len(part["schedule"]["incoming"])
    if module.check_mode:
        module.exit_json(
            changed=False, id=part["schedule"]["plan"], would_probe=lines, would_answer=answer,
            msg="%s would probe %d and answer %d probe(s) (check mode: nothing sent)" % (name, len(lines), answer),
        )
    verbs = {"libibverbs": p["libibverbs"]} if p["libibverbs"] else {}
    result = rn.mesh_run(host, part, node=name, **verbs).to_dict()
    failed = sum(1 for x in result["probes"] if any(lv["status"] == "fail" for lv in x["levels"]))
    module.exit_json(
        changed=False, id=result["plan"], result=result, would_probe=lines, would_answer=answer,
        msg="%s ran %d probe(s), %d failed (the verdict is the merged report's)" % (name, len(result["probes"]), failed),
    )


def fault_line(f):
    where = " ".join(x for x in (f.get("host"), f.get("nic")) if x)
    if f["element"] == "rail":
        where = f.get("rail") or ""
    return "%s %s %s: %s" % (f["element"], where, f["cause"], f["message"])


def step_report(module, rn, p):
    if not p["plan"]:
        module.fail_json(msg="plan: give the plan (step=plan's return value 'plan')")
    regs = p["results"] or {}
    results = [r for r in (run_result(regs[h]) for h in sorted(regs)) if r is not None]
    checked = [h for h, v in sorted(regs.items()) if isinstance(v, dict) and "would_probe" in v and "result" not in v]
    if checked and not results:
        msg = "check mode: %d node(s) would probe %d probe(s); nothing was sent" % (
            len(checked), sum(len(regs[h]["would_probe"]) for h in checked))
        module.exit_json(changed=False, id=p["plan"].get("id"), report={}, faults=[], table=[msg],
                         summary={}, verdict="check_mode", passed=False, msg=msg)
    report = rn.mesh_report(p["plan"], results).to_dict()
    table = ["%s: %s" % (report["verdict"], report["message"])] + [fault_line(f) for f in report["faults"]]
    module.exit_json(
        changed=False, id=report["plan"], report=report, faults=report["faults"], summary=report["summary"],
        table=table, verdict=report["verdict"], passed=report["passed"], msg=report["message"],
    )


def main():
    argument_spec = dict(HOST_ARGS)
    argument_spec.update(
        step=dict(type="str", required=True, choices=["node", "plan", "run", "report"]),
        rail_by=dict(type="str", default="auto", choices=["auto", "subnet", "index"]),
        family=dict(type="str", choices=["ipv4", "ipv6"]),
        nics=dict(type="list", elements="str"),
        nodes=dict(type="list", elements="dict"),
        peers=dict(type="int", default=2),
        rounds=dict(type="int", default=3),
        all_pairs=dict(type="bool", default=False),
        intra_host=dict(type="bool", default=True),
        rotation=dict(type="int", default=0),
        levels=dict(type="list", elements="str", choices=["neighbor", "ip", "rdma"], default=["neighbor", "ip", "rdma"]),
        port=dict(type="int", default=18530),
        start_in=dict(type="float", default=15),
        neighbor_ms=dict(type="int", default=1000),
        ip_ms=dict(type="int", default=1000),
        rdma_ms=dict(type="int", default=10000),
        rdma_size=dict(type="int", default=65536),
        rdma_iterations=dict(type="int", default=4),
        rdma_latency_iterations=dict(type="int", default=16),
        plan=dict(type="dict"),
        node=dict(type="str"),
        libibverbs=dict(type="path"),
        results=dict(type="dict"),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    rn = require_roce_net(module, "mesh_node", "mesh_plan", "mesh_node_plan", "mesh_node_plans", "mesh_run", "mesh_report")
    p = module.params
    step = dict(node=step_node, plan=step_plan, run=step_run, report=step_report)[p["step"]]
    try:
        step(module, rn, p)
    except rn.RoceNetError as err:
        module.fail_json(**error_result(err, step=p["step"]))


if __name__ == "__main__":
    main()
