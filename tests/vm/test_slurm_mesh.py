"""The cluster mesh the Slurm way on Soft-RoCE guests, and the same result as
the Ansible way on the very same guests (docs/mesh.md, docs/vm.md).

Three Debian 12 nodes (kernel 6.1, Slurm 22.05 from Debian's packages in the
image), laid out as the Ansible fleet's (scripts/vm/fleet.py: two RDMA NICs
eth0/eth1 on one subnet with rxe on each, a management NIC eth2 on `mgmt0`
where the harness reaches them over SSH), fixed with `roce-net apply`, form one
Slurm cluster: munged with one key made per run, slurmctld on node1, slurmd on
every node, Debian's own units, talking over the management network. One
release for the whole cluster: slurmctld accepts slurmd of its own and the two
previous releases only, and Debian 11, 12 and 13 carry Slurm 20.11, 22.05 and
24.11, so the Ansible fleet of three generations cannot be one cluster; and on
Debian 12 the RDMA level runs on every node (Debian 11's rxe oopsed).

With node3's NIC behind a switch port that is down — the NIC the main table
prefers, the one `ip route get` to a peer picks, so the RDMA probes of node3's
healthy NIC pass only if `probe rdma`'s TCP exchange leaves from its source
address, by that NIC — both ways run at the neighbour, IP and RDMA levels:
`mesh.yml` over SSH, then `salloc -N 3 roce-net-slurm-mesh DIR` on node1 (srun,
one task per node; DIR on a directory every guest shares, 9p). Their merged
faults are equal, and name exactly that NIC.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

import fleet
import seed
import stacks
import vmbed
from conftest import ansible_and_wheel, cannot_run

NODES = [dataclasses.replace(n, release="bookworm") for n in fleet.NODES]
#: Where the guests see the bed's writable shared directory (the job's shared file system).
SHARED = "/mnt/shared"
ROCE_NET = "/mnt/roce-net/bin/roce-net"
SLURM_MESH = "/mnt/roce-net/bin/roce-net-slurm-mesh"

#: slurm.conf of the guests' cluster: Debian's paths, the controller on node1,
#: every node by its management address; one CPU a node (one task per node);
#: no cgroup-based tracking or task plugin (nothing of it is needed to launch
#: a task); timeouts with room for emulated guests.
SLURM_CONF = "\n".join(
    [
        "ClusterName=rnt",
        f"SlurmctldHost={NODES[0].name}({NODES[0].mgmt})",
        "SlurmUser=slurm",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        "StateSaveLocation=/var/lib/slurm/slurmctld",
        "SlurmdSpoolDir=/var/lib/slurm/slurmd",
        "SlurmctldPidFile=/run/slurmctld.pid",
        "SlurmdPidFile=/run/slurmd.pid",
        "SlurmctldLogFile=/var/log/slurm/slurmctld.log",
        "SlurmdLogFile=/var/log/slurm/slurmd.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ReturnToService=2",
        "SlurmdTimeout=300",
        "MessageTimeout=30",
        "TCPTimeout=10",
        *(f"NodeName={n.name} NodeAddr={n.mgmt} CPUs=1 RealMemory=100 State=UNKNOWN" for n in NODES),
        "PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
        "",
    ]
)

#: One peer per NIC per round (two rounds) for both ways: with two, every
#: guest ran up to eight RDMA transfers at once (a round's probes run
#: together) on its one emulated CPU, and on a loaded host one of them failed
#: in the Slurm way while mesh.yml's had passed (`peer-failed`, the prober's
#: rxe counting retransmissions: most likely a starved guest missing the
#: probe's ACK timeout of about 67 ms, six times).
PEERS = 1
#: The plan's options of the Slurm way, the same as mesh.yml's (fleet.MESH,
#: PEERS) but the start: srun launches the run on every node in seconds, where
#: Ansible's async launch over SSH took up to 128 s.
SLURM_PLAN = (
    f"--all-pairs --peers {PEERS} --no-intra-host --start-in 60 --neighbor-ms 3000 --ip-ms 3000 --rdma-ms 20000"
)


def _setup(g: vmbed.Guest, n: fleet.Node, wheel: str, key: bytes) -> str:
    """Node N's part: roce_net for the Ansible modules (the wheel unpacked into
    the system Python's site directory, a stand-in for the install role that
    test_ansible_ssh.py proves), the fix (`roce-net apply`), the shared
    directory, names, the munge key, slurm.conf and the daemons."""
    hosts = "".join(f"{m.mgmt} {m.name}\n" for m in NODES)
    daemons = "munge slurmctld slurmd" if n is NODES[0] else "munge slurmd"
    return "\n".join(
        [
            "set -e",
            "site=$(python3 -c 'import sys; print(\"/usr/local/lib/python%d.%d/dist-packages\" % sys.version_info[:2])')",
            f"install -d $site && python3 -m zipfile -e /mnt/roce-net/wheel/{wheel} $site",
            "python3 -c 'import roce_net'",
            f"{ROCE_NET} apply --yes >/root/apply.txt 2>&1",
            vmbed.mount_scratch(SHARED),
            f"printf '%s' '{hosts}' >>/etc/hosts",
            f"echo {base64.b64encode(key).decode()} | base64 -d >/etc/munge/munge.key",
            "chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key",
            stacks.write_file("/etc/slurm/slurm.conf", SLURM_CONF, "644"),
            "install -d -o slurm -g slurm /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm",
            f"systemctl start {daemons}",
        ]
    )


def _not_passed(results: list[Path]) -> list[str]:
    """Every level of the nodes' mesh results that did not pass, with its
    cause and detail (what a failing comparison needs to be read)."""
    lines = []
    for f in results:
        r = json.loads(f.read_text())
        for pr in r["probes"]:
            for lv in pr["levels"]:
                if lv["status"] != "pass":
                    lines.append(
                        f"  {r['host']} {pr['from']} -> {pr['to_host']} {pr['to']} {lv['level']} {lv['status']}:"
                        f" {lv.get('cause')}: {str(lv.get('message'))[:300]}"
                    )
    return lines


def _slurm_logs(guests: list[vmbed.Guest]) -> str:
    return "\n".join(
        f"--- {g.name}\n"
        + g.sh("tail -n 25 /var/log/slurm/*.log; systemctl --no-pager status munge slurmd slurmctld 2>&1 | tail -n 30", 60).text()
        for g in guests
    )


@pytest.fixture(scope="module")
def bed() -> Iterator[tuple[vmbed.Bed, list[vmbed.Guest]]]:
    whl = ansible_and_wheel()
    try:
        files = {
            "bin/roce-net": vmbed.roce_net_binary(),
            "bin/roce-net-slurm-mesh": vmbed.REPO / "packaging/slurm/roce-net-slurm-mesh",
            f"wheel/{whl.name}": whl,
        }
        b = vmbed.Bed(release="bookworm", share_files=files, scratch=True)
        b.__enter__()
    except vmbed.VmError as e:
        cannot_run(str(e))
        raise
    try:
        guests = fleet.make(b, NODES)
        b.boot()
        for g, n in zip(guests, NODES):
            fleet.configure(g, n)
        for g in guests:
            seed.wait_active(g, 2, unit=stacks.RXE_SERVICE)
        t0 = time.monotonic()
        key = os.urandom(1024)
        # Every node at once (each guest keeps one host core busy).
        pids = [(g, g.spawn(_setup(g, n, whl.name, key))) for g, n in zip(guests, NODES)]
        for g, pid in pids:
            r = g.wait(pid, "setup", 600)
            assert r.ok, f"{g.name}: setting up roce_net, the fix and Slurm failed: {r.text()[-3000:]}"
        # Every node registered with slurmctld and idle.
        ctl = guests[0]
        deadline = time.monotonic() + 300
        while True:
            states = ctl.sh("sinfo -h -N -o '%N %T'", 60).out.split()
            if states[1::2] == ["idle"] * len(NODES):
                break
            if time.monotonic() > deadline:
                raise vmbed.VmError(f"the Slurm nodes are not all idle after 300 s: {states}\n{_slurm_logs(guests)}")
            time.sleep(3)
        print(f"roce_net, the fix and Slurm on {len(guests)} nodes in {time.monotonic() - t0:.0f} s: {states}")
        yield b, guests
    finally:
        b.close()


def test_slurm_mesh_names_the_same_fault_as_mesh_yml_on_the_same_guests(bed, tmp_path):
    b, guests = bed
    by_name = {g.name: g for g in guests}
    ctl = by_name["node1"]
    version = ctl.ok("sinfo --version").strip()
    assert version.split()[-1].startswith("22.05."), version  # Debian 12's Slurm
    broken = by_name["node3"]
    # The NIC the main table prefers towards the peers: the one node3's
    # unbound traffic leaves by. The other NIC's probes pass only when bound
    # to their source.
    nic = json.loads(broken.ok(f"ip -j route get {NODES[1].rdma[0]}"))[0]["dev"]
    healthy = "eth1" if nic == "eth0" else "eth0"
    tap = broken.nics[int(nic[-1])].tap
    inv = fleet.inventory(b, tmp_path / "inventory.ini", sys.executable, nodes=NODES)
    out = tmp_path / "ansible"
    out.mkdir()
    run = f"{SHARED}/mesh-run"
    try:
        # The switch port down: node3 still sees its link up and its carrier.
        vmbed.ns_run(b.ns, "ip", "link", "set", tap, "down")
        assert "LOWER_UP" in broken.ok(f"ip link show {nic}"), broken.ok(f"ip link show {nic}")
        p = fleet.play(b, inv, "mesh.yml", tmp_path, *fleet.MESH, "-e", f"mesh_peers={PEERS}", "-e", f"result_dir={out}")
        t0 = time.monotonic()
        s = ctl.sh(f"ROCE_NET={ROCE_NET} salloc -N {len(NODES)} {SLURM_MESH} {run} {SLURM_PLAN}", 900)
        slurm_s = time.monotonic() - t0
    finally:
        vmbed.ns_run(b.ns, "ip", "link", "set", tap, "up")
    ansible = fleet.result(out / "mesh-report.json")
    assert ansible is not None, p.fatal()
    shared = b.scratch_dir / "mesh-run"
    slurm = fleet.result(shared / "report.json")
    assert slurm is not None, f"{s.text()[-4000:]}\n{_slurm_logs(guests)}"
    print(f"mesh.yml, node3 {nic}'s port down: {p.seconds:.0f} s; the Slurm way: {slurm_s:.0f} s\n{s.text()[-3000:]}")
    ansible_results = sorted(out.glob("mesh-result-node*.json"))
    slurm_results = sorted((shared / "results").glob("*.json"))
    for way, files in (("ansible", ansible_results), ("slurm", slurm_results)):
        print(f"{way}: every level that did not pass:\n" + "\n".join(_not_passed(files)))

    # The Ansible way: the play fails and names exactly the one NIC.
    assert p.rc != 0, p.out[-3000:]
    assert ansible["verdict"] == "fail", ansible["message"]
    assert [f[:3] for f in fleet.faults(ansible)] == [("nic", "node3", nic)], ansible["message"]
    # The Slurm way: a job of three nodes, srun one task each, exit 6 (faults).
    assert s.rc == 6, s.text()[-3000:]
    assert f"{len(NODES)} node(s) of job" in s.out, s.text()[-3000:]
    assert sorted(f.name for f in (shared / "results").glob("*.json")) == [f"{n.name}.json" for n in NODES]
    assert slurm["verdict"] == "fail", slurm["message"]
    assert slurm["summary"]["results"] == len(NODES) and slurm["summary"]["not_run"] == 0, slurm["summary"]
    # The same result: the same faults, element, host, NIC and cause.
    assert fleet.faults(slurm) == fleet.faults(ansible), (slurm["message"], ansible["message"])
    assert sorted(slurm["faults"][0]["evidence"]["peers"]) == [f"node1 {nic}", f"node2 {nic}"], slurm["faults"][0]

    # The RDMA level on every node, both ways: it passes on every pair but
    # those of the broken NIC (node3's healthy NIC's too: its exchange left from
    # its source, not by the NIC the main table prefers), fails on each of those.
    for way, files in (("ansible", ansible_results), ("slurm", slurm_results)):
        rdma = fleet.rdma_levels(files)
        assert rdma, f"{way}: no RDMA level in any node's result"
        for (src, dst), status in rdma.items():
            assert status == ("fail" if f"node3 {nic}" in (src, dst) else "pass"), (way, rdma)
        # Every NIC probed its rail's two others (all pairs, both ways), node3's
        # healthy one too, the client of the exchange with the NIC the main
        # table prefers down.
        assert {src for src, _ in rdma} == {f"{n.name} {e}" for n in NODES for e in ("eth0", "eth1")}, (way, rdma)
        assert rdma[(f"node3 {healthy}", f"node2 {healthy}")] == "pass", (way, rdma)
        assert rdma[(f"node2 {healthy}", f"node3 {healthy}")] == "pass", (way, rdma)
