"""The cluster mesh from Python (docs/mesh.md): mesh_node, mesh_plan,
mesh_node_plan(s), mesh_run and mesh_report, typed and with the binding's
errors; a lab fleet in namespaces, fixed, passes, and with one NIC's switch
port down the report names exactly that NIC."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional

import pytest

import roce_net
from _fixtures import state_doc
from conftest import lab_fleet

HOSTS, NICS = 3, 2


def two_snapshots() -> List[roce_net.HostState]:
    """Two four-NIC hosts in one /24 (distinct names, addresses and MACs)."""
    a, b = state_doc(), state_doc()
    b["hostname"] = "gpu-node-2"
    for i, addr in enumerate(b["addresses"]):
        addr["address"] = f"198.18.0.{31 + i}"
    for i, iface in enumerate(b["interfaces"][1:]):
        iface["mac"] = f"02:bb:00:00:00:{i:02x}"
    return [roce_net.parse_snapshot(json.dumps(a)), roce_net.parse_snapshot(json.dumps(b))]


def test_plan_and_parts_are_typed_and_round_trip():
    states = two_snapshots()
    node = roce_net.mesh_node(states[0])
    assert isinstance(node, roce_net.MeshNode)
    assert node.host == "gpu-node-1:rnt-py-fixture"
    # Four NICs of one host in one subnet: NIC k on rail #k.
    assert [n.rail for n in node.nics] == [f"198.18.0.0/24#{k}" for k in range(4)]
    # Snapshots, entries and their plain data are all nodes.
    plan = roce_net.mesh_plan([states[0], roce_net.mesh_node(states[1]).to_dict()], levels=["neighbor", "ip"], start_in=0)
    assert isinstance(plan, roce_net.MeshPlan)
    assert [n.host for n in plan.inventory.nodes] == [node.host, "gpu-node-2:rnt-py-fixture"]
    assert plan.options.levels == roce_net.MeshLevels(neighbor=True, ip=True, rdma=False)
    assert len(plan.options.token) == 32
    # The defaults are the CLI's: every level, port 18530 (MESH_DEFAULT_PORT).
    full = roce_net.mesh_plan(states, start_in=0).options
    assert full.levels == roce_net.MeshLevels(neighbor=True, ip=True, rdma=True)
    assert (full.port, full.peers, full.rounds, full.neighbor_ms, full.rdma_ms) == (18530, 2, 3, 1000, 10000)
    # The same inventory and options: the same pairs (the id), another token.
    again = roce_net.mesh_plan(states, levels=["neighbor", "ip"], start_in=0)
    assert again.id == plan.id and again.options.token != plan.options.token
    # A node's part, from the plan, its dict or its JSON: what it would probe.
    for form in (plan, plan.to_dict(), plan.to_json()):
        part = roce_net.mesh_node_plan(form, node.host)
        assert isinstance(part, roce_net.MeshNodePlan)
        assert part.schedule.host == node.host
    probe = part.schedule.outgoing[0]
    assert isinstance(probe, roce_net.MeshScheduledProbe)
    # `from` is a Python keyword: the attribute is from_, the JSON key stays from.
    assert probe.from_.name.startswith("eth") and probe.to_host == "gpu-node-2:rnt-py-fixture"
    assert "from" in probe.to_dict() and "from_" not in probe.to_dict()
    assert roce_net.MeshScheduledProbe.from_json(probe.to_json()) == probe
    assert roce_net.MeshPlan.from_dict(plan.to_dict()) == plan
    parts = roce_net.mesh_node_plans(plan)
    assert [p.schedule.host for p in parts] == [n.host for n in plan.inventory.nodes]
    # Two hosts: each NIC's rail holds one peer, NIC k of the other host.
    pairs = sorted((p.from_.name, p.to_host, p.to.name) for p in part.schedule.outgoing)
    assert pairs == [(f"eth{k}", "gpu-node-2:rnt-py-fixture", f"eth{k}") for k in range(4)]


def test_a_node_without_a_result_is_named_and_bad_input_raises_the_binding_errors():
    states = two_snapshots()
    plan = roce_net.mesh_plan(states, levels=["neighbor", "ip"], start_in=0)
    rep = roce_net.mesh_report(plan, [])
    assert isinstance(rep, roce_net.MeshReport)
    assert rep.verdict == "fail" and not rep.passed
    assert sorted((f.element, f.host, f.cause) for f in rep.faults) == [
        ("host", "gpu-node-1:rnt-py-fixture", "no-result"),
        ("host", "gpu-node-2:rnt-py-fixture", "no-result"),
    ]
    with pytest.raises(roce_net.InvalidInputError, match="not a level"):
        roce_net.mesh_plan(states, levels=["icmp"])
    with pytest.raises(roce_net.InvalidInputError, match="0 to 3600"):
        roce_net.mesh_plan(states, start_in=-1)
    with pytest.raises(roce_net.InvalidInputError, match="peers 0"):
        roce_net.mesh_plan(states, peers=0)
    with pytest.raises(roce_net.InvalidInputError, match="rail_by"):
        roce_net.mesh_node(states[0], rail_by="switch")
    with pytest.raises(roce_net.ParseError, match="MeshPlan"):
        roce_net.mesh_report({"id": "x"}, [])
    with pytest.raises(roce_net.ParseError, match="MeshNodeResult"):
        roce_net.mesh_report(plan, ["{}"])
    with pytest.raises(roce_net.NotFoundError, match="not in mesh plan"):
        roce_net.mesh_node_plan(plan, "gpu-node-9")
    with pytest.raises(TypeError):
        roce_net.mesh_report(plan, [42])


# --- in lab namespaces ---------------------------------------------------------


@pytest.fixture
def mesh_lab():
    """roce_net.Lab.fleet(3, 2): host k's NICs r0, r1 at 198.18.k.11/16 and
    .12/16 on one switch; removed even on failure."""
    with lab_fleet(HOSTS, NICS, "py-mesh") as lab:
        yield lab


def fixed_hosts(lab, tmp_path: Path) -> List[roce_net.Host]:
    """Each host of the fleet through its namespace (an /etc root of its own
    under ``tmp_path``), fixed by ``apply`` under the default policy."""
    hosts = []
    for k, ns in enumerate(lab.fleet_hosts):
        (tmp_path / f"etc{k}").mkdir()
        h = roce_net.Host(netns=ns, etc_root=tmp_path / f"etc{k}")
        h.apply(roce_net.plan(h.snapshot(), roce_net.Policy()), state_dir=tmp_path / f"run{k}")
        hosts.append(h)
    return hosts


def run_mesh(hosts: List[roce_net.Host], nics: Optional[List[str]] = None) -> roce_net.MeshReport:
    """Plan from every host's entry (``mesh_node(nics=nics)``), run every host's
    part at once (the GIL is released), merge."""
    plan = roce_net.mesh_plan(
        [roce_net.mesh_node(h.snapshot(), nics=nics) for h in hosts], levels=["neighbor", "ip"], rounds=2,
        neighbor_ms=300, ip_ms=300, start_in=1.5,
    )
    with ThreadPoolExecutor(len(hosts)) as pool:
        results = list(pool.map(lambda h: roce_net.mesh_run(h, plan), hosts))
    for r in results:
        assert isinstance(r, roce_net.MeshNodeResult) and r.plan == plan.id
        assert r.responder.errors == (), (r.host, r.responder.errors)
    # The report reads results as classes, dicts (what Ansible registers) or JSON.
    mixed = [results[0], results[1].to_dict()] + [r.to_json() for r in results[2:]]
    return roce_net.mesh_report(plan.to_dict(), mixed)


@pytest.mark.needs_root
def test_a_fixed_lab_fleet_passes_and_a_pulled_cable_is_named(mesh_lab, tmp_path):
    lab = mesh_lab
    hosts = fixed_hosts(lab, tmp_path)

    fixed = run_mesh(hosts)
    assert fixed.passed and fixed.verdict == "pass" and fixed.faults == (), fixed.message
    s = fixed.summary
    assert (s.nodes, s.results, s.nics, s.failed, s.not_run) == (HOSTS, HOSTS, HOSTS * NICS, 0, 0)
    assert s.passed == s.probes > 0

    # Host 3's r1: its switch port down (Lab.fleet names host k's NIC i's port
    # s<(k-1)*NICS + i> in the switch namespace).
    subprocess.run(["ip", "-n", lab.switch_ns, "link", "set", "dev", f"s{2 * NICS + 1}", "down"], check=True)
    broken = run_mesh(hosts)
    assert broken.verdict == "fail" and not broken.passed
    st = hosts[2].snapshot()
    faults = [(f.element, f.host, f.nic, f.cause) for f in broken.faults]
    assert faults == [("nic", f"{st.hostname}:{lab.fleet_hosts[2]}", "r1", "link-down")], broken.message
    f = broken.faults[0]
    assert f.rail and f.level == "neighbor" and f.message
    # The evidence: the NIC as its node saw it, its peers, the causes counted.
    assert f.evidence["nic"]["carrier"] is False, f.evidence
    assert f.evidence["failed_pairs"] == len(f.evidence["peers"]) >= 2, f.evidence
    assert set(f.evidence["causes"]) <= {"link-down", "no-answer", "no-reply"}, f.evidence
    assert f.fix[0].endswith(f"ip -n {lab.fleet_hosts[2]} link show dev r1"), f.fix
    assert "switch port" in f.fix[1], f.fix
    # The plain data is the library's JSON shape: what `mesh report --json` writes.
    d: Dict[str, object] = broken.to_dict()
    assert d["faults"][0]["element"] == "nic" and d["verdict"] == "fail"  # type: ignore[index]


@pytest.mark.needs_root
def test_a_nic_that_lost_its_address_is_named_not_dropped(mesh_lab, tmp_path):
    lab = mesh_lab
    hosts = fixed_hosts(lab, tmp_path)
    # Host 3's r1: its switch port down and its addresses gone (what
    # systemd-networkd does when a NIC loses its carrier); host 2's r0: up,
    # its address flushed.
    ns = lab.fleet_hosts
    subprocess.run(["ip", "-n", lab.switch_ns, "link", "set", "dev", f"s{2 * NICS + 1}", "down"], check=True)
    subprocess.run(["ip", "-n", ns[2], "addr", "flush", "dev", "r1"], check=True)
    subprocess.run(["ip", "-n", ns[1], "addr", "flush", "dev", "r0"], check=True)
    entry = roce_net.mesh_node(hosts[2].snapshot(), nics=["r0", "r1"])
    assert [n.name for n in entry.nics] == ["r0"]
    (gone,) = entry.unprobed
    assert isinstance(gone, roce_net.MeshUnprobedNic)
    assert (gone.name, gone.cause, gone.rail) == ("r1", "link-down", "198.18.0.0/16#1")
    assert gone.seen.carrier is False

    r = run_mesh(hosts, nics=["r0", "r1"])
    h = [x.snapshot() for x in hosts]
    faults = sorted((f.element, f.host, f.nic, f.cause) for f in r.faults)
    assert faults == [
        ("nic", f"{h[1].hostname}:{ns[1]}", "r0", "no-address"),
        ("nic", f"{h[2].hostname}:{ns[2]}", "r1", "link-down"),
    ], r.message
    assert r.summary.unprobed == 2 and r.summary.failed == 0 and r.summary.passed == r.summary.probes > 0
    # Without the rails named, the scope of h2 and h3 (the NICs sharing a
    # subnet) is empty: each is named, and nothing passes.
    r = run_mesh(hosts)
    assert sorted((f.element, f.cause) for f in r.faults) == [("host", "no-nics")] * 2, r.message
    assert not r.passed


@pytest.mark.needs_root
def test_the_rdma_level_loads_the_libibverbs_it_is_given(tmp_path):
    """``mesh_run(libibverbs=)`` is what both halves of the RDMA level load (as
    ``probe_rdma``'s): a library that does not load is the responder's note
    naming it, and each RDMA probe is skipped with the loader's reason."""
    lib = str(tmp_path / "no-such" / "libibverbs.so.1")
    with lab_fleet(2, 1, "py-meshv") as lab:
        hosts = [roce_net.Host(netns=ns) for ns in lab.fleet_hosts]
        entries = []
        for h in hosts:
            e = roce_net.mesh_node(h.snapshot(), nics=["r0"]).to_dict()
            # As if r0 backed an RDMA port: the plan schedules the RDMA level.
            e["nics"][0]["rdma"] = True
            entries.append(e)
        plan = roce_net.mesh_plan(entries, levels=["rdma"], rounds=1, peers=1, rdma_ms=1000, start_in=1.5)
        with ThreadPoolExecutor(len(hosts)) as pool:
            results = list(pool.map(lambda h: roce_net.mesh_run(h, plan, libibverbs=lib), hosts))
    for r in results:
        assert len(r.notes) == 1 and "RDMA is not available here" in r.notes[0], r.notes
        assert lib in r.notes[0], r.notes
        assert r.responder.answered == (), r.responder
        assert len(r.probes) == 1, r.probes
        (level,) = r.probes[0].levels
        assert (level.level, level.status) == ("rdma", "skipped"), level
        assert lib in level.message, level
