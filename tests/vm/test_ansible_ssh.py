"""Ansible over real SSH against three guests of three Debian generations
(Debian 11 with Python 3.9 and kernel 5.10, Debian 12, Debian 13): the
collection's own playbooks, run as a cluster engineer would, from the
controller (the harness, in the bed's namespace) to nodes that have nothing of
roce-net on them (scripts/vm/fleet.py, docs/vm.md, docs/ansible.md).

0. The Debian 11 node is made as minimal as the docs promise: its Python
   without pip, setuptools, pkg_resources, wheel or packaging (python3 and
   python3-venv only; the image carries pip for the other tests).
1. `fleet.yml --tags install`: the install role puts the wheel into a venv
   made with each node's own Python (the minimal node's too: the role ran
   ansible.builtin.pip, which stopped there without packaging).
2. `fleet.yml --check --diff`: facts, the fleet report (ARP flux between the
   nodes), the plan and the persistent files as a diff; no node changes.
3. `fleet.yml -e persist=networkd -e reboot=true`: apply, persist, reboot
   (`ansible.builtin.reboot`), then the probes and a clean fleet report from
   what the nodes brought up at boot.
4. `rdma-matrix.yml`: RDMA between the nodes after the reboot, proven (the
   Debian 12 node probing the Debian 13 node's server; not the Debian 11
   node, whose kernel's rxe driver oopsed serving the probe, docs/vm.md).
5. The same run again: changed=0 on every node, no reboot.
6. `mesh.yml`, the cluster mesh, on the fixed fleet with one NIC's switch port
   down (a node3 NIC's tap, in the bed's namespace): RDMA between the Debian 12
   and 13 nodes, the neighbour and IP levels everywhere (the Debian 11 node
   takes part without its rxe devices: its kernel's rxe oopsed serving a
   probe). The play fails, and the merged report names exactly that NIC; the
   nodes' results show RDMA passing between the healthy NICs.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

import fleet
import seed
import stacks
import vmbed
from conftest import ansible_and_wheel, cannot_run, dist

PY_VERSIONS = {"node1": "3.9", "node2": "3.11", "node3": "3.13"}
KERNELS = {"node1": "5.10.", "node2": "6.1.", "node3": "6.12."}


@pytest.fixture(scope="module")
def bed() -> Iterator[tuple[vmbed.Bed, list[vmbed.Guest]]]:
    ansible_and_wheel()
    try:
        b = vmbed.Bed(release="bookworm", share_files={})
        b.__enter__()
    except vmbed.VmError as e:
        cannot_run(str(e))
        raise
    try:
        guests = fleet.make(b)
        b.boot()
        for g, n in zip(guests, fleet.NODES):
            fleet.configure(g, n)
        t0 = time.monotonic()
        left = fleet.make_minimal(guests[0])
        print(f"node1 made minimal in {time.monotonic() - t0:.0f} s; its Python packages: {left}")
        for g in guests:
            seed.wait_active(g, 2, unit=stacks.RXE_SERVICE)
        yield b, guests
    finally:
        b.close()


def test_the_fleet_is_three_debian_generations(bed):
    _b, guests = bed
    for g in guests:
        assert g.ok("uname -r").startswith(KERNELS[g.name]), (g.name, g.ok("uname -r"))
        py = g.ok("python3 -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])'").strip()
        assert py == PY_VERSIONS[g.name], (g.name, py)
        # Nothing of roce-net on the node before the install role runs.
        assert g.sh("command -v roce-net || test -e /opt/roce-net").rc != 0, g.name
    # The Debian 11 node's Python is as minimal as the docs promise.
    for mod in fleet.MINIMAL_NODE_LACKS:
        assert not guests[0].sh(f"python3 -c 'import {mod}'").ok, mod


def test_ansible_over_ssh_installs_checks_applies_persists_reboots_and_proves(bed, tmp_path):
    b, guests = bed
    by_name = {g.name: g for g in guests}
    whl = dist("roce_net-*.whl")
    assert whl is not None
    inv = fleet.inventory(b, tmp_path / "inventory.ini", sys.executable)
    wheel = ["-e", f"roce_net_wheel={whl}"]
    fleet.teach_flux(guests)

    # 1. The install role, alone: a venv with each node's own Python.
    p = fleet.play(b, inv, "fleet.yml", tmp_path, "--tags", "install", *wheel)
    assert p.rc == 0, p.fatal()
    assert set(p.recap) == set(by_name), p.out[-3000:]
    for g in guests:
        v = g.ok("/opt/roce-net/bin/python -c 'import sys, roce_net; print(\"%d.%d\" % sys.version_info[:2], roce_net.__version__)'")
        assert v.split()[0] == PY_VERSIONS[g.name], (g.name, v)
    print(f"install: {p.seconds:.0f} s, recap {p.recap}")

    # 2. Check and diff: the plan and the files, nothing changed.
    before = {g.name: fleet.routing(g) for g in guests}
    out_dir = tmp_path / "check"
    out_dir.mkdir()
    common = [*wheel, "-e", "persist=networkd", "-e", "reboot=true"]
    p = fleet.play(b, inv, "fleet.yml", tmp_path, "--check", "--diff", *common, "-e", f"result_dir={out_dir}")
    assert p.rc == 0, p.fatal()
    assert all(v["changed"] >= 1 and v["failed"] == 0 for v in p.recap.values()), p.recap
    res = fleet.result(out_dir / "fleet-result.json")
    assert res is not None, p.out[-3000:]
    fb = res["before"]
    assert fb["host_findings"]["error"] > 0, fb  # ARP flux on every node, as Debian leaves it
    assert len(fb["hosts"]) == len(fleet.NODES), fb["hosts"]
    for h, r in res["apply"].items():
        assert r["changed"] is True and r["changes"], (h, r)
    assert "+rule from 198.18.4.12 lookup" in p.out, p.out[-3000:]  # the plan's diff
    assert "90-roce-net.conf" in p.out, p.out[-3000:]  # the persistent files' diff
    for g in guests:
        assert fleet.routing(g) == before[g.name], f"{g.name}: check mode changed the node"
        assert g.sh("ls /etc/systemd/network/*.network.d/90-roce-net.conf").rc != 0, g.name
    print(f"check: {p.seconds:.0f} s, cross-host findings before {fb['summary']}, host findings {fb['host_findings']}")

    # 3. Apply, persist, reboot; the probes and the report after the boot.
    boots = {g.name: g.boot_id() for g in guests}
    out_dir = tmp_path / "apply"
    out_dir.mkdir()
    p = fleet.play(b, inv, "fleet.yml", tmp_path, *common, "-e", f"result_dir={out_dir}")
    assert p.rc == 0, p.fatal()
    assert all(v["changed"] >= 1 and v["failed"] == 0 for v in p.recap.values()), p.recap
    res = fleet.result(out_dir / "fleet-result.json")
    assert res is not None, p.out[-3000:]
    for h, r in res["apply"].items():
        assert r["applied"]["applied"] > 0, (h, r)
        assert r.get("persisted"), (h, r)
    for g in guests:
        # The guest agent's connection went with the old boot.
        assert g.agent is not None
        g.agent.close()
        g.wait_ready(300)
        assert g.boot_id() != boots[g.name], f"{g.name} did not reboot"
        rules = json.loads(g.ok("ip -j rule show") or "[]")
        n = next(x for x in fleet.NODES if x.name == g.name)
        srcs = {r.get("src") for r in rules}
        assert set(n.rdma) <= srcs, f"{g.name}: after the reboot the rules are {rules}"
    fa = res["after"]
    assert fa["findings"] == [], fa["findings"]
    assert fa["host_findings"]["error"] == 0 and fa["host_findings"]["warning"] == 0, (
        fa["hosts"],
        {g.name: _findings(g) for g in guests},
    )
    for h, r in res["probe"].items():
        assert r["flux"] == [] and r["answered"] > 0, (h, r)
    print(f"apply+persist+reboot: {p.seconds:.0f} s, recap {p.recap}")

    # 4. RDMA between the nodes, from what they brought up at boot.
    out_dir = tmp_path / "rdma"
    out_dir.mkdir()
    servers = json.dumps({"rdma_servers": fleet.RDMA_HOSTS[-1:]})
    p = fleet.play(
        b, inv, "rdma-matrix.yml", tmp_path, *wheel,
        "-e", "rdma_group=rdma", "-e", servers, "-e", "rdma_duration=120", "-e", f"result_dir={out_dir}",
        # A workload emulated NICs carry within the bound (seed.PROBE's).
        "-e", "rdma_timeout=30", "-e", "rdma_size=4096", "-e", "rdma_iterations=20", "-e", "rdma_latency_iterations=20",
    )
    m = fleet.result(out_dir / "rdma-matrix.json")
    assert p.rc == 0, p.fatal()
    assert m is not None and m["matrix"]["passed"], m
    cells = len(fleet.RDMA_HOSTS) - 1
    assert len(m["clients"]) == cells and all(m["clients"].values()), m
    print(f"rdma matrix: {p.seconds:.0f} s\n" + "\n".join(m["matrix"]["table"]))

    # 5. Again: nothing to do, nothing rebooted.
    boots = {g.name: g.boot_id() for g in guests}
    out_dir = tmp_path / "again"
    out_dir.mkdir()
    p = fleet.play(b, inv, "fleet.yml", tmp_path, *common, "-e", f"result_dir={out_dir}")
    assert p.rc == 0, p.fatal()
    assert all(v["changed"] == 0 and v["failed"] == 0 for v in p.recap.values()), p.recap
    res = fleet.result(out_dir / "fleet-result.json")
    assert res is not None and res["after"]["findings"] == [], res
    for g in guests:
        assert g.boot_id() == boots[g.name], f"{g.name} rebooted on a run with nothing to do"
    print(f"again: {p.seconds:.0f} s, recap {p.recap}")
    FIXED.append(True)


#: Set once the test above has installed roce_net, fixed the fleet and proven it.
FIXED: list[bool] = []

def test_mesh_over_ssh_names_the_one_nic_whose_switch_port_is_down(bed, tmp_path):
    b, guests = bed
    if not FIXED:
        pytest.fail("the fleet was not installed, fixed and proven by the test before (see its failure)")
    _mesh(b, guests, tmp_path)


def _mesh(b: vmbed.Bed, guests: list[vmbed.Guest], tmp_path: Path) -> None:
    """Step 6: mesh.yml with one of node3's NICs behind a switch port that is down."""
    by_name = {g.name: g for g in guests}
    inv = fleet.inventory(b, tmp_path / "mesh-inventory.ini", sys.executable, node_python=fleet.VENV_PYTHON)
    # Debian 11's rxe (kernel 5.10) oopsed serving a probe (docs/vm.md): its
    # NICs join the mesh without RDMA ports, at the neighbour and IP levels.
    old = by_name["node1"]
    old.ok("rdma link delete rxe0 && rdma link delete rxe1")
    assert "rxe" not in old.ok("rdma link show"), old.ok("rdma link show")
    broken = by_name["node3"]
    # probe rdma's TCP exchange was not bound to its source address: it left
    # by the NIC the main table routes the subnet by, and with that NIC broken
    # the RDMA probes of the node's healthy NIC failed too (docs/vm.md). The
    # NIC broken is node3's other one, as in the run this was proven with.
    main = json.loads(broken.ok(f"ip -j route get {fleet.NODES[1].rdma[0]}"))[0]["dev"]
    nic = "eth1" if main == "eth0" else "eth0"
    tap = broken.nics[int(nic[-1])].tap
    try:
        # The switch port down: node3 still sees its link up (a tap's state does
        # not reach the guest), nothing it sends on the NIC arrives, nothing reaches it.
        vmbed.ns_run(b.ns, "ip", "link", "set", tap, "down")
        assert "LOWER_UP" in broken.ok(f"ip link show {nic}"), broken.ok(f"ip link show {nic}")
        out = tmp_path / "mesh-broken"
        out.mkdir()
        p = fleet.play(b, inv, "mesh.yml", tmp_path, *fleet.MESH, "-e", f"result_dir={out}")
    finally:
        vmbed.ns_run(b.ns, "ip", "link", "set", tap, "up")
    report = fleet.result(out / "mesh-report.json")
    assert report is not None, p.fatal()
    print(f"mesh, node3 {nic}'s port down: {p.seconds:.0f} s\n" + json.dumps(report, indent=1)[:6000])
    assert p.rc != 0, p.out[-3000:]
    assert report["verdict"] == "fail", report["message"]
    assert [(f["element"], f["host"], f["nic"]) for f in report["faults"]] == [("nic", "node3", nic)], report["message"]
    fault = report["faults"][0]
    assert fault["cause"] and fault["fix"], fault
    assert sorted(fault["evidence"]["peers"]) == [f"node1 {nic}", f"node2 {nic}"], fault["evidence"]
    assert f"fail: 1 fault(s): nic node3 {nic} {fault['cause']}" in p.out, p.out[-3000:]
    assert report["summary"]["results"] == len(guests) and report["summary"]["not_run"] == 0, report["summary"]
    rdma = fleet.rdma_levels(sorted(out.glob("mesh-result-node*.json")))
    # RDMA between the Debian 12 and 13 nodes: it passes on every pair but
    # those of the broken NIC, and fails on each of those; node1 has none.
    assert rdma, "no RDMA level in any node's result"
    for (src, dst), status in rdma.items():
        assert "node1" not in src + dst, rdma
        assert status == ("fail" if f"node3 {nic}" in (src, dst) else "pass"), rdma
    assert any(f"node3 {nic}" in k for k in rdma) and "pass" in rdma.values(), rdma

    old.ok("systemctl restart rnt-rxe.service && rdma link show rxe1/1", 120)


def _findings(g: vmbed.Guest) -> str:
    """The node's doctor findings now, with the roce_net the role installed
    (for a failure message)."""
    return g.sh(
        "/opt/roce-net/bin/python -c 'import roce_net; s = roce_net.Host().snapshot(); "
        "print([(f.id, f.severity, f.message) for f in roce_net.doctor(s) if f.severity != \"info\"])'; "
        "ip rule; ip route show table all | grep -v ^local; networkctl --no-pager 2>&1 | tail -n 6",
        120,
    ).text()
