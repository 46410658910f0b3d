"""IPv6 rails on real RDMA: the seed's guests with ULA addresses on every NIC
(one /64), Soft-RoCE's RoCE v2 GIDs for them, the node broken the IPv6 way (no
per-NIC IPv6 source routing), then `roce-net apply` and rollback (docs/vm.md).

Runs after test_seed_rdma.py on the same guests and leaves them as it found
them: the IPv6 addresses it adds are removed, its apply is rolled back (the
seed's own IPv4 apply, when one ran, stays). What each step saw is printed
(pytest -rA).
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any, Iterator

import pytest

import seed
from seed import NODE_IPS, NODE_MACS, RN, Case, Net

NODE_V6 = [f"fd00:198:18::1{i}" for i in range(1, 5)]
PEER_V6 = "fd00:198:18::21"
V6 = Net(tuple(NODE_V6), PEER_V6)
V6_PREFIX = 64

# What earlier steps found, for the later ones.
seen: dict[str, Any] = {}


def gids(g) -> dict[str, list[tuple[int, str, str]]]:
    """Every non-empty GID of every rxe device's port 1: device -> [(index, GID, type)],
    read in one command (forking per entry is slow under TCG)."""
    out = g.ok(
        "cd /sys/class/infiniband && for d in *; do for f in $d/ports/1/gids/*; do"
        ' read -r x < $f; case $x in 0000:0000:0000:0000:0000:0000:0000:0000) continue;; esac;'
        ' i=${f##*/}; t=; read -r t < $d/ports/1/gid_attrs/types/$i 2>/dev/null;'
        ' echo "$d $i $x $t"; done; done'
    )
    res: dict[str, list[tuple[int, str, str]]] = {}
    for line in out.splitlines():
        d, i, x, t = (line.split(" ", 3) + [""])[:4]
        res.setdefault(d, []).append((int(i), x, t))
    return res


def gid_words(ip: str) -> str:
    """An IPv6 address as sysfs prints a GID: 8 groups of 4 hex digits."""
    return ipaddress.IPv6Address(ip).exploded


def v6_gid_index(table: list[tuple[int, str, str]], ip: str) -> int:
    idx = [i for i, x, t in table if x == gid_words(ip) and t == "RoCE v2"]
    if not idx:
        pytest.fail(f"no RoCE v2 GID for {ip}: {table}")
    return min(idx)


def egress(node) -> dict[int, str]:
    """The NIC the node's routing sends from each IPv6 address to the peer
    (`ip -6 route get PEER from ADDR`): what every packet the kernel routes
    (a TCP server's replies, NCCL's bootstrap, the node's own pings) takes."""
    out = {}
    for k, ip in enumerate(NODE_V6):
        r = json.loads(node.ok(f"ip -j -6 route get {PEER_V6} from {ip}") or "[]")
        out[k] = r[0].get("dev", "") if r else ""
    return out


def sent_by(node, count: int = 5) -> dict[int, dict[str, int]]:
    """For each node address: the packets each node NIC sent while the node
    pinged the peer COUNT times from that address (`ping -I ADDR`, the way
    any node-initiated traffic bound to an address goes), from the
    interface counters. (The peer's pings would not show it: Linux sends an
    ICMPv6 echo reply by the interface the request came in on, icmp6_iif.)"""

    def tx() -> dict[str, int]:
        out = node.ok("cd /sys/class/net && for d in eth*; do read -r n < $d/statistics/tx_packets; echo $d $n; done")
        return {d: int(n) for d, n in (line.split() for line in out.splitlines())}

    res = {}
    for k, ip in enumerate(NODE_V6):
        a = tx()
        r = node.sh(f"ping -c {count} -i 0.2 -W 3 -I {ip} {PEER_V6}", 60)
        assert r.ok, r.text()
        b = tx()
        res[k] = {d: b[d] - a[d] for d in sorted(b)}
    return res


def wrong_egress(d: dict[int, dict[str, int]], count: int = 5) -> set[int]:
    """The node addresses whose COUNT echo requests left by another NIC."""
    return {k for k, sent in d.items() if sent.get(f"eth{k}", 0) < count}


def probe_json(c: Case) -> dict[str, Any]:
    assert c.client is not None
    try:
        return json.loads(c.client.out)
    except json.JSONDecodeError:
        pytest.fail(f"{c.label()}: not JSON: {c.client.text()[-1500:]}")


def check_v6_gids(cases: list[Case]) -> None:
    """Every probe that ran chose the RoCE v2 GIDs of the IPv6 addresses."""
    for c in cases:
        if c.tool != "roce-net probe rdma" or not c.client or not c.client.out.strip().startswith("{"):
            continue
        r = probe_json(c)
        here, there = (PEER_V6, c.ip) if c.direction == "peer->node" else (c.ip, PEER_V6)
        if r.get("local"):
            assert r["local"]["gid"] == here and r["local"]["address"] == here, (c.label(), r["local"])
        if r.get("peer"):
            assert r["peer"]["gid"] == there, (c.label(), r["peer"])


@pytest.fixture(scope="module")
def v6_bed(seed_bed) -> Iterator[tuple[Any, Any]]:
    """The seed's guests with one ULA per NIC, the same /64 on every NIC, as
    a GPU node's admin would give them; removed afterwards, with this
    module's apply rolled back if a step left it in place."""
    _bed, node, peer = seed_bed
    node.ok("\n".join(["set -e"] + [f"ip -6 addr replace {ip}/{V6_PREFIX} dev eth{k}" for k, ip in enumerate(NODE_V6)]))
    peer.ok(f"ip -6 addr replace {PEER_V6}/{V6_PREFIX} dev eth0")
    try:
        seed.wait_ipv6_usable(node, len(NODE_V6))
        seed.wait_ipv6_usable(peer, 1)
        yield node, peer
    finally:
        if seen.get("applied") and not seen.get("rolled_back"):
            print(node.sh(f"{RN} rollback", 300).text())
        node.sh("; ".join(f"ip -6 addr del {ip}/{V6_PREFIX} dev eth{k}" for k, ip in enumerate(NODE_V6)) + "; ip -6 neigh flush all")
        peer.sh(f"ip -6 addr del {PEER_V6}/{V6_PREFIX} dev eth0; ip -6 neigh flush all")


def test_rxe_makes_a_roce_v2_gid_of_every_ipv6_address(v6_bed):
    node, peer = v6_bed
    t_node, t_peer = gids(node), gids(peer)
    print("node GIDs:", json.dumps(t_node))
    print("peer GIDs:", json.dumps(t_peer))
    idx_node = {v6_gid_index(t_node[f"rxe{k}"], ip) for k, ip in enumerate(NODE_V6)}
    idx_peer = v6_gid_index(t_peer["rxe0"], PEER_V6)
    # One index on every node device, so one `ib_write_bw -x` serves them all.
    assert len(idx_node) == 1, idx_node
    seen["gidx"] = (idx_node.pop(), idx_peer)
    # The IPv4 GIDs are still there: the rails are dual-stack now.
    for k, ip in enumerate(NODE_IPS):
        assert any(x == gid_words("::ffff:" + ip) for _i, x, _t in t_node[f"rxe{k}"]), t_node[f"rxe{k}"]


def test_before_fix_nd_is_right_but_every_address_leaves_by_eth0(v6_bed):
    node, peer = v6_bed
    # Broken the IPv6 way: whatever IPv4 holds (the seed's fix, when it ran),
    # no per-NIC IPv6 table or rule, one main table with the /64 on every NIC.
    rules = node.ok("ip -6 rule show")
    print("node's IPv6 rules:\n" + rules)
    assert not any(ip in rules for ip in NODE_V6), rules
    node.ok("ip -6 neigh flush all")
    peer.ok("ip -6 neigh flush all")
    for ip in NODE_V6:
        peer.sh(f"ping -c 1 -W 2 {ip}")
    neigh = {ip: mac for ip, mac in seed.neigh_macs(peer).items() if ip in NODE_V6}
    print("peer's IPv6 neighbour entries:", neigh)
    # Linux answers a neighbour solicitation only on the NIC that holds the
    # target (ndisc_recv_ns looks the address up on the receiving device):
    # no flux, the peer learns each address with its own NIC's MAC.
    assert neigh == {ip: NODE_MACS[k] for k, ip in enumerate(NODE_V6)}, neigh
    # What is wrong is the egress: the node's routing sends from every
    # address by the first NIC of the /64.
    e = egress(node)
    print("ip -6 route get the peer from each address:", e)
    assert [k for k, dev in e.items() if dev != f"eth{k}"] == [1, 2, 3], e
    sent = sent_by(node)
    print("packets per node NIC while the node pinged the peer from each address:", json.dumps(sent))
    assert wrong_egress(sent) == {1, 2, 3}, sent
    # The ping itself works: the peer answers each address at its own NIC's
    # MAC, so only the way out is wrong (no rp_filter in IPv6 to drop it).
    seen["before_egress"] = e


def test_before_fix_rdma_over_ipv6_gids(v6_bed):
    """RDMA itself does not take the main table's way: rxe sends from the
    GID's own netdev (rxe_find_route6 sets the flow's oif) and ib_core
    resolves the destination MAC bound to it, so what the kernel's routing
    gets wrong does not reach the RDMA traffic. Recorded as seen."""
    node, peer = v6_bed
    gidx_node, gidx_peer = seen.get("gidx") or pytest.fail("the GID step did not run")
    cases: list[Case] = []
    for direction in ("peer->node", "node->peer"):
        got = seed.probe(node, peer, direction, V6)
        print(seed.table(got))
        cases += got
    # perftest's out-of-band exchange goes over IPv4 (its TCP is IPv4-only by
    # default); the queue pairs use the IPv6 GIDs given by -x.
    for direction in ("peer->node", "node->peer"):
        got = seed.write_bw(node, peer, direction, gidx_node, gidx_peer)
        for c in got:
            c.tool = f"ib_write_bw -x {gidx_node if direction == 'peer->node' else gidx_peer} (IPv6 GID)"
        print(seed.table(got))
        cases += got
    seen["before"] = cases
    check_v6_gids(cases)
    bad = [c for c in cases if not c.ok]
    assert not bad, "before the fix, over IPv6 GIDs:\n" + seed.table(bad)


def test_apply_gives_every_ipv6_address_its_own_nic_and_rdma_passes(v6_bed):
    node, peer = v6_bed
    r = node.sh(f"{RN} apply --yes", 300)
    print(r.text())
    assert r.ok, r.text()
    seen["applied"] = True
    for k, ip in enumerate(NODE_V6):
        assert f"announced {ip} on eth{k}" in r.out, r.out
    print(node.ok("ip -6 rule show"))
    e = egress(node)
    print("ip -6 route get the peer from each address:", e)
    assert e == {k: f"eth{k}" for k in range(len(NODE_V6))}, e
    sent = sent_by(node)
    print("packets per node NIC while the node pinged the peer from each address:", json.dumps(sent))
    assert not wrong_egress(sent), sent
    neigh = {ip: mac for ip, mac in seed.neigh_macs(peer).items() if ip in NODE_V6}
    assert neigh == {ip: NODE_MACS[k] for k, ip in enumerate(NODE_V6)}, neigh
    cases = seed.probe(node, peer, "peer->node", V6) + seed.probe(node, peer, "node->peer", V6)
    print(seed.table(cases))
    check_v6_gids(cases)
    bad = [c for c in cases if not c.ok]
    assert not bad, "after the fix:\n" + seed.table(bad) + "\n" + "\n".join(c.text for c in bad)
    for c in cases:
        j = probe_json(c)
        assert j["write_to_peer"]["verified"] and j["write_from_peer"]["verified"], c.label()


def test_rollback_restores_the_ipv6_routing_it_found(v6_bed):
    node, _peer = v6_bed
    if not seen.get("applied"):
        pytest.fail("the apply step did not run")
    r = node.sh(f"{RN} rollback", 300)
    print(r.text())
    assert r.ok, r.text()
    seen["rolled_back"] = True
    rules = node.ok("ip -6 rule show")
    assert not any(ip in rules for ip in NODE_V6), rules
    e = egress(node)
    assert e == seen.get("before_egress", e), e
    print("after rollback, ip -6 route get the peer from each address:", e)
