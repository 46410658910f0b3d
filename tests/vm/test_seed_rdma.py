"""The seed, on real RDMA: ping works but RDMA fails; roce-net finds why, fixes
it on the node alone and proves it with RDMA traffic (docs/vm.md).

The tests run in file order on one pair of guests: each step starts from the
state the previous one left (the seed broken, then fixed, then broken again
with a strict rp_filter, ...). What each step saw is printed (pytest -rA).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import seed
from seed import NODE_IPS, NODE_MACS, PEER_IP, RN, Case

# What earlier steps found, for the later ones.
seen: dict[str, Any] = {}


def by(cases: list[Case], tool: str, direction: str) -> dict[int, Case]:
    return {c.nic: c for c in cases if c.tool == tool and c.direction == direction}


def flux_affected(peer_neigh: dict[str, str]) -> set[int]:
    """The node NICs whose address the peer maps to another NIC's MAC."""
    return {k for k, ip in enumerate(NODE_IPS) if peer_neigh.get(ip, "").lower() != NODE_MACS[k]}


def probe_json(c: Case) -> dict[str, Any]:
    assert c.client is not None
    try:
        return json.loads(c.client.out)
    except json.JSONDecodeError:
        pytest.fail(f"{c.label()}: not JSON: {c.client.text()[-1500:]}")


def test_before_fix_ping_works_and_rdma_fails_where_arp_flux_sent_it(seed_bed):
    _bed, node, peer = seed_bed
    seed.make_broken(node, peer)
    neigh = seed.neigh_macs(peer)
    affected = flux_affected(neigh)
    print("peer's neighbour entries:", neigh)
    assert affected, f"the peer learned every node address with its own NIC's MAC: no ARP flux to show ({neigh})"
    gidx_node, gidx_peer = seed.gid_index(node), seed.gid_index(peer)
    cases = seed.matrix(node, peer, gidx_node, gidx_peer, tools=("ping", "probe", "ib_write_bw", "rping"))
    print(seed.table(cases))
    seen["before"] = cases
    seen["affected"] = affected
    for c in cases:
        if c.tool == "ping":
            assert c.ok, f"ping fails before the fix: {c.label()}: {c.text}"
    for tool in ("roce-net probe rdma", "ib_write_bw", "rping"):
        cells = by(cases, tool, "peer->node")
        failed = {k for k, c in cells.items() if not c.ok}
        # Every NIC the peer's ARP cache sends to another NIC fails; the NIC
        # whose MAC the peer holds works.
        assert failed >= affected, f"{tool} peer->node: failed {sorted(failed)}, flux-affected {sorted(affected)}:\n{seed.table(list(cells.values()))}"
        assert failed, f"{tool} peer->node: nothing failed"


def test_before_fix_probe_rdma_explains_arp_flux_with_evidence_from_both_ends(seed_bed):
    cases = seen.get("before")
    if cases is None:
        pytest.fail("the before step did not run")
    cells = by(cases, "roce-net probe rdma", "peer->node")
    for k in seen["affected"]:
        c = cells[k]
        assert not c.ok
        r = probe_json(c)
        f = r["failure"]
        assert f["value"].get("status") == 12, f"{c.label()}: {f}"
        assert f["value"].get("name") == "transport retry counter exceeded"
        assert f["cause"] == "arp-flux", f"{c.label()}: {f['message']}"
        ev = f["evidence"]
        # The server told the client its NIC's MAC during the exchange.
        assert ev["peer_mac"] == NODE_MACS[k]
        assert ev["peer_netdev"] == f"eth{k}"
        assert NODE_MACS[k] not in ev["neighbor"]
        assert ev["mac_owner_on_peer"] in {f"eth{j}" for j in range(len(NODE_IPS)) if j != k}
        # Within its own bound, not perftest's retry-forever hang.
        assert r["elapsed_ms"] < 20_000


def test_doctor_on_the_node_names_every_cause(seed_bed):
    _bed, node, _peer = seed_bed
    r = node.sh(f"{RN} --json doctor", 300)
    findings = json.loads(r.out)["findings"] if r.out.strip().startswith("{") else json.loads(r.out)
    ids = {f["id"] for f in findings}
    print("doctor:", sorted(ids))
    for want in ("arp-ignore", "arp-announce", "source-rule-missing"):
        assert any(i.startswith(want) for i in ids), f"doctor does not name {want}: {sorted(ids)}"
    assert r.rc != 0, "doctor exits 0 on the broken node"


def test_apply_on_the_node_alone_heals_the_peer_and_every_pair_passes(seed_bed):
    _bed, node, peer = seed_bed
    r = node.sh(f"{RN} apply --yes", 300)
    print(r.text())
    assert r.ok, r.text()
    for k, ip in enumerate(NODE_IPS):
        assert f"announced {ip} on eth{k}" in r.out, r.out
    # No command on the peer: its cache took the announcements.
    neigh = seed.neigh_macs(peer)
    print("peer's neighbour entries after the node's apply:", neigh)
    assert flux_affected(neigh) == set(), neigh
    cases = seed.matrix(node, peer, seed.gid_index(node), seed.gid_index(peer))
    print(seed.table(cases))
    seen["after"] = cases
    bad = [c for c in cases if not c.ok]
    assert not bad, "after the fix:\n" + seed.table(bad) + "\n" + "\n".join(c.text for c in bad)
    for c in cases:
        if c.tool == "roce-net probe rdma":
            r = probe_json(c)
            assert r["write_to_peer"]["verified"] and r["write_from_peer"]["verified"], c.label()
            assert r["latency"]["iterations"] > 0
    d = node.sh(f"{RN} --json doctor", 300)
    print(d.out[-3000:])


def test_strict_rp_filter_as_rhel_ships_it_fails_the_same_way_and_apply_fixes_it(seed_bed):
    _bed, node, peer = seed_bed
    seed.make_broken(node, peer, rp_filter=1)
    neigh = seed.neigh_macs(peer)
    affected = flux_affected(neigh)
    print("rp_filter=1; peer's neighbour entries:", neigh)
    assert affected, neigh
    cases = seed.ping(node, peer, "peer->node") + seed.probe(node, peer, "peer->node")
    print(seed.table(cases))
    assert all(c.ok for c in cases if c.tool == "ping"), seed.table(cases)
    cells = by(cases, "roce-net probe rdma", "peer->node")
    failed = {k for k, c in cells.items() if not c.ok}
    assert failed >= affected, seed.table(cases)
    for k in failed:
        f = probe_json(cells[k])["failure"]
        # The entry flips while the probe runs (the node's own ARP from the
        # right NIC, its replies from the wrong one): still ARP flux.
        assert f["cause"] == "arp-flux", f"{cells[k].label()}: {f['message']}"
    d = json.loads(node.sh(f"{RN} --json doctor", 300).out)
    ids = {f["id"] for f in d["findings"]}
    print("doctor:", sorted(ids))
    assert "rp-filter-strict" in ids and "arp-ignore" in ids, sorted(ids)
    r = node.sh(f"{RN} apply --yes", 300)
    assert r.ok, r.text()
    assert flux_affected(seed.neigh_macs(peer)) == set()
    cases = seed.probe(node, peer, "peer->node") + seed.probe(node, peer, "node->peer")
    cases += seed.write_bw(node, peer, "peer->node", seed.gid_index(node), seed.gid_index(peer))
    print(seed.table(cases))
    assert all(c.ok for c in cases), seed.table(cases)


def test_one_nic_mtu_differs_from_its_peer(seed_bed):
    _bed, node, peer = seed_bed
    node.ok("ip link set eth1 mtu 9000")
    try:
        seed.wait_active(node, len(NODE_IPS))
        cells = by(seed.probe(node, peer, "peer->node"), "roce-net probe rdma", "peer->node")
        c = cells[1]
        r = probe_json(c)
        print(json.dumps({"path_mtu": r["path_mtu"], "notes": r["notes"], "ok": r["ok"]}))
        # RDMA works at the smaller MTU, and the probe says the ends differ.
        assert c.ok, c.text
        assert r["path_mtu"] == 1024
        assert r["peer"]["active_mtu"] == 4096 and r["local"]["active_mtu"] == 1024
        assert any("active MTUs differ" in n for n in r["notes"]), r["notes"]
        d = json.loads(node.sh(f"{RN} --json doctor", 300).out)
        mm = [f for f in d["findings"] if f["id"] == "mtu-mismatch"]
        print(json.dumps(mm))
        assert [f["subject"].get("interface") for f in mm] == ["eth1"], mm
    finally:
        node.ok("ip link set eth1 mtu 1500")


def test_rxe_counters_as_the_doctor_reads_them(seed_bed):
    _bed, _node, peer = seed_bed
    # The peer's RC queue pairs ended in status 12 during the flux above.
    raw = peer.ok("cat /sys/class/infiniband/rxe0/ports/1/hw_counters/retry_exceeded_err")
    d = json.loads(peer.sh(f"{RN} --json doctor", 300).out)
    rt = [f for f in d["findings"] if f["id"] == "rdma-retransmits"]
    print(raw, json.dumps(rt))
    assert int(raw) > 0
    assert rt and rt[0]["evidence"]["counters"]["retry_exceeded_err"] == int(raw), rt
