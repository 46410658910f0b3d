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
"""

from __future__ import annotations

import json
import sys
import time
from typing import Iterator

import pytest

import fleet
import seed
import stacks
import vmbed
from conftest import cannot_run, dist

PY_VERSIONS = {"node1": "3.9", "node2": "3.11", "node3": "3.13"}
KERNELS = {"node1": "5.10.", "node2": "6.1.", "node3": "6.12."}


@pytest.fixture(scope="module")
def bed() -> Iterator[tuple[vmbed.Bed, list[vmbed.Guest]]]:
    whl = dist("roce_net-*.whl")
    if whl is None:
        cannot_run("no roce_net wheel in dist/ (scripts/build-artifacts.sh wheel, run by scripts/test-python.sh)")
    try:
        import ansible  # noqa: F401
    except ImportError:
        cannot_run("ansible-core is not installed in this Python (scripts/test-python.sh installs it into .venv)")
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


def _findings(g: vmbed.Guest) -> str:
    """The node's doctor findings now, with the roce_net the role installed
    (for a failure message)."""
    return g.sh(
        "/opt/roce-net/bin/python -c 'import roce_net; s = roce_net.Host().snapshot(); "
        "print([(f.id, f.severity, f.message) for f in roce_net.doctor(s) if f.severity != \"info\"])'; "
        "ip rule; ip route show table all | grep -v ^local; networkctl --no-pager 2>&1 | tail -n 6",
        120,
    ).text()
