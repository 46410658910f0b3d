"""The seed, on real RDMA: ping works but RDMA fails; roce-net finds why, fixes
it on the node alone and proves it with RDMA traffic (docs/vm.md).

The tests run in file order on one pair of guests: each step starts from the
state the previous one left (the seed broken, then fixed, then broken again
with a strict rp_filter, ...). What each step saw is printed (pytest -rA).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

import demo
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


def healed_within(peer, secs: float = 15) -> float:
    """Seconds until the peer's cache holds every node NIC's own MAC, without a
    command on the peer. The node's gratuitous ARP does it at once in almost
    every run; once in a few runs an ARP reply the node's wrong NIC sent
    before the fix reached the peer after the announcement, and the peer's
    own probing corrected the entry seconds later (docs/vm.md)."""
    t0 = time.monotonic()
    while True:
        left = flux_affected(seed.neigh_macs(peer))
        if not left:
            return time.monotonic() - t0
        if time.monotonic() - t0 > secs:
            pytest.fail(f"node NICs {sorted(left)} still wrong in the peer's cache {secs:.0f} s after apply:\n" + peer.ok("ip neigh show"))
        time.sleep(1)


def test_before_fix_ping_works_and_rdma_fails_where_arp_flux_sent_it(seed_bed):
    _bed, node, peer = seed_bed
    seed.make_broken(node, peer)
    neigh = seed.neigh_macs(peer)
    print("peer's neighbour entries:", neigh)
    assert flux_affected(neigh), f"the peer learned every node address with its own NIC's MAC: no ARP flux to show ({neigh})"
    gidx_node, gidx_peer = seed.gid_index(node), seed.gid_index(peer)
    cases = seed.ping(node, peer, "peer->node")
    assert all(c.ok for c in cases), seed.table(cases)
    # Peer -> node first, one tool at a time. Under flux an entry can change
    # while a tool runs (the node's own ARP from one NIC or another), so a
    # cell is judged by the peer's entries just before and just after it: a
    # NIC whose MAC the peer held right all along never fails, and each tool
    # fails somewhere.
    affected: set[int] = set()
    runs = (
        lambda: seed.probe(node, peer, "peer->node"),
        lambda: seed.write_bw(node, peer, "peer->node", gidx_node, gidx_peer),
        lambda: seed.rping(node, peer, "peer->node"),
    )
    for run in runs:
        wrong = flux_affected(seed.neigh_macs(peer))
        got = run()
        wrong |= flux_affected(seed.neigh_macs(peer))
        affected |= wrong
        cases += got
        failed = {c.nic for c in got if not c.ok}
        print(seed.table(got))
        assert failed, f"{got[0].tool} peer->node: nothing failed"
        assert failed <= wrong, f"{got[0].tool} peer->node: failed {sorted(failed)}, flux-affected {sorted(wrong)}:\n{seed.table(got)}"
    more = seed.matrix(node, peer, gidx_node, gidx_peer)
    cases += [c for c in more if c.direction == "node->peer"]
    print(seed.table([c for c in more if c.direction == "node->peer"]))
    assert all(c.ok for c in cases if c.tool == "ping"), seed.table(cases)
    seen["before"] = cases
    seen["affected"] = affected


def test_before_fix_probe_rdma_explains_arp_flux_with_evidence_from_both_ends(seed_bed):
    cases = seen.get("before")
    if cases is None:
        pytest.fail("the before step did not run")
    cells = by(cases, "roce-net probe rdma", "peer->node")
    failed = [c for c in cells.values() if not c.ok]
    assert failed
    for c in failed:
        k = c.nic
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
        # Stopped by the transport's retry limit (the completion above), not
        # at its --timeout, nor perftest's retry-forever hang.
        assert f["value"]["type"] == "completion", f
        # The demo's words for it (scripts/vm/demo.py): the probe ran on the
        # peer, so its "this host" is the peer and its "the peer" the node.
        said = demo.in_demo_words(f["message"])
        assert "this host" not in said and "the node" in said, said
        assert "the peer" not in f["message"] or "the node" in said


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
    print(f"the peer's cache held every NIC's own MAC {healed_within(peer):.1f} s after apply")
    print("peer's neighbour entries after the node's apply:", seed.neigh_macs(peer))
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
    assert failed and failed <= affected | flux_affected(seed.neigh_macs(peer)), seed.table(cases)
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
    print(r.text())
    assert r.ok, r.text()
    print(peer.ok("ip neigh show"))
    print(f"the peer's cache held every NIC's own MAC {healed_within(peer):.1f} s after apply")
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
