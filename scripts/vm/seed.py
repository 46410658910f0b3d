"""The seed scenario on real RDMA: a node with four NICs on one subnet, a peer
with one, Soft-RoCE (rdma_rxe) on every NIC (docs/vm.md).

The RDMA matrix runs, for every node NIC and in both directions, perftest's
`ib_write_bw` (with the GID index `roce-net nccl-env` names), rdma_cm's `rping`
and `roce-net probe rdma`, plus ping. Used by the VM tests (tests/vm/) and by the
demo (scripts/vm-lab.sh).
"""

from __future__ import annotations

import json
import re
import textwrap
import time
from dataclasses import dataclass
from typing import Callable, Optional

from vmbed import Bed, Guest, Result, VmError, log

NODE_MACS = [f"52:54:00:12:00:1{i}" for i in range(1, 5)]
NODE_IPS = [f"198.18.0.1{i}" for i in range(1, 5)]
PEER_MAC = "52:54:00:12:00:21"
PEER_IP = "198.18.0.21"
PREFIX = 24
RN = "/mnt/roce-net/bin/roce-net"
# perftest and ibv_rc_pingpong use retry count 7, which rxe never counts down:
# on a broken path they hang, so every client runs under this bound (a hang
# past it is a failure, recorded as such).
CLIENT_SECS = 25
SERVER_SECS = 60
# How long the harness waits for any one command: a bound on the harness, not
# on the tools (a debug build of roce-net starts slowly under TCG).
HARNESS_SECS = 240
# Small transfers: under TCG rxe moves about 0.03 Gb/s, enough for pass/fail.
PERF = "-s 4096 -n 20 -F"
PROBE = "--size 4096 --iterations 20 --latency-iterations 20 --timeout 20"


@dataclass(frozen=True)
class Net:
    """Where the matrix runs: the node's RDMA addresses (ethK has the K-th,
    rxeK on it) and the peer's one (its eth0, rxe0)."""

    node_ips: tuple[str, ...]
    peer_ip: str


SEED = Net(tuple(NODE_IPS), PEER_IP)


def make(bed: Bed) -> tuple[Guest, Guest]:
    node = bed.guest("node", NODE_MACS)
    peer = bed.guest("peer", [PEER_MAC])
    return node, peer


def nic_setup(g: Guest, ips: list[str]) -> None:
    """Addresses and one rxe device per NIC (rxeK on ethK), as a GPU node's
    admin has them: every NIC in one subnet, the distribution's defaults."""
    lines = ["set -e", f"hostname {g.name}", "modprobe rdma_rxe"]
    for k, ip in enumerate(ips):
        lines += [
            f"ip link set eth{k} up",
            f"ip addr replace {ip}/{PREFIX} dev eth{k}",
            f"rdma link show rxe{k}/1 >/dev/null 2>&1 || rdma link add rxe{k} type rxe netdev eth{k}",
        ]
    g.ok("\n".join(lines))


def wait_active(g: Guest, n: int, timeout: float = 60, unit: Optional[str] = None) -> None:
    """Wait until N of G's RDMA ports are ACTIVE. UNIT is the guest's unit
    that adds its rxe devices at boot (the stand-in for a NIC's own RDMA
    driver): when the ports do not come, what it logged is printed and it is
    started once more before giving up (it once left none after a boot under
    NetworkManager in CI, docs/vm.md)."""
    for attempt in (0, 1):
        deadline = time.monotonic() + timeout
        while True:
            out = g.ok("rdma -j link show")
            links = json.loads(out or "[]")
            active = [x for x in links if x.get("state") == "ACTIVE"]
            if len(active) >= n:
                return
            if time.monotonic() > deadline:
                break
            time.sleep(1)
        why = g.sh(
            "ip -br link; lsmod | grep -i rxe; systemctl --no-pager status rnt-rxe.service;"
            " journalctl -b --no-pager -u rnt-rxe.service | tail -n 20; dmesg | grep -i -e rxe -e rdma | tail -n 20",
            timeout=60,
        ).out
        msg = f"{g.name}: {n} RDMA ports not ACTIVE after {timeout:.0f} s: {out}\n{why}"
        if unit is None or attempt == 1:
            raise VmError(msg)
        log(f"{msg}\n{g.name}: starting {unit} once more")
        g.ok(f"systemctl restart {unit}", 180)


def wait_ipv6_usable(g: Guest, n: int, secs: float = 30) -> None:
    """Wait until N of G's fd00:198:18: addresses finished duplicate address
    detection (a tentative address gets no GID a peer can use, and the kernel
    takes no route with it as the source)."""
    t0 = time.monotonic()
    while True:
        out = json.loads(g.ok("ip -j -6 addr show") or "[]")
        ok = [
            a
            for i in out
            for a in i.get("addr_info", [])
            if a.get("local", "").startswith("fd00:198:18:") and not a.get("tentative") and not a.get("dadfailed")
        ]
        if len(ok) >= n:
            return
        if time.monotonic() - t0 > secs:
            raise VmError(f"{g.name}: IPv6 addresses still tentative or failed after {secs:.0f} s:\n" + g.ok("ip -6 addr show"))
        time.sleep(1)


def make_broken(node: Guest, peer: Guest, rp_filter: Optional[int] = None) -> None:
    """The node as the distribution leaves it (ARP flux, no source routing),
    optionally with a strict rp_filter (RHEL's 1), and a peer whose ARP cache
    learned the node's addresses the way such a node teaches them."""
    cmds = [
        f"{RN} rollback >/dev/null 2>&1 || true",
        "sysctl -qw net.ipv4.conf.all.arp_ignore=0 net.ipv4.conf.all.arp_announce=0",
    ]
    for k in range(len(NODE_IPS)):
        cmds.append(f"sysctl -qw net.ipv4.conf.eth{k}.arp_ignore=0 net.ipv4.conf.eth{k}.arp_announce=0")
    if rp_filter is not None:
        cmds.append(f"sysctl -qw net.ipv4.conf.all.rp_filter={rp_filter}")
        for k in range(len(NODE_IPS)):
            cmds.append(f"sysctl -qw net.ipv4.conf.eth{k}.rp_filter={rp_filter}")
    cmds.append("ip neigh flush all")
    node.ok("\n".join(cmds))
    peer.ok("ip neigh flush all")
    for ip in NODE_IPS:
        peer.sh(f"ping -c 1 -W 2 {ip}")


def neigh_macs(g: Guest) -> dict[str, str]:
    out = g.ok("ip -j neigh show")
    return {n["dst"]: n.get("lladdr", "") for n in json.loads(out or "[]") if "dst" in n}


@dataclass
class Case:
    """One cell of the matrix."""

    tool: str
    direction: str  # "peer->node" or "node->peer"
    nic: int
    ok: bool
    text: str
    client: Optional[Result] = None
    ip: str = ""

    def label(self) -> str:
        return f"{self.tool} {self.direction} eth{self.nic} ({self.ip or NODE_IPS[self.nic]})"


def nccl_env(g: Guest) -> dict:
    """`roce-net --json nccl-env` on the guest."""
    return json.loads(g.ok(f"{RN} --json nccl-env"))


def gid_index(g: Guest) -> int:
    """The NCCL_IB_GID_INDEX `roce-net nccl-env` advises on this guest."""
    env = nccl_env(g)
    for v in env.get("vars", []):
        if v.get("name") == "NCCL_IB_GID_INDEX" and v.get("value") is not None:
            return int(v["value"])
    raise VmError(f"{g.name}: `roce-net --json nccl-env` advises no NCCL_IB_GID_INDEX: {json.dumps(env)[:500]}")


def _listening(g: Guest, ports: list[int], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        out = g.sh("ss -Hltn").out
        if all(re.search(rf":{p}\b", out) for p in ports):
            return
        if time.monotonic() > deadline:
            raise VmError(f"{g.name}: servers on ports {ports} not listening after {timeout:.0f} s")
        time.sleep(0.5)


def _run_pairs(server: Guest, client: Guest, servers: list[str], clients: list[str], ports: Optional[list[int]], settle: float = 0) -> list[tuple[Result, Result]]:
    """Start every server, wait until they listen, run every client at once,
    and collect both sides."""
    # `exec`: the pid guest-exec returns is the server's own, so it can be
    # ended once its client is done.
    spids = [server.spawn("exec " + c) for c in servers]
    if ports:
        _listening(server, ports)
    if settle:
        time.sleep(settle)
    cpids = [client.spawn(c) for c in clients]
    cres = [client.wait(p, c, HARNESS_SECS) for p, c in zip(cpids, clients)]
    # A server whose client failed may wait for it still: a few seconds to
    # finish its report, then it is ended.
    time.sleep(3)
    server.sh("kill " + " ".join(str(p) for p in spids) + " 2>/dev/null; true")
    sres = [server.wait(p, c, HARNESS_SECS) for p, c in zip(spids, servers)]
    return list(zip(sres, cres))


def write_bw(node: Guest, peer: Guest, direction: str, gidx_node: int, gidx_peer: int, net: Net = SEED) -> list[Case]:
    ips, peer_ip = net.node_ips, net.peer_ip
    n = len(ips)
    ports = [18600 + k for k in range(n)]
    if direction == "peer->node":
        servers = [f"timeout {SERVER_SECS} ib_write_bw -d rxe{k} -x {gidx_node} -p {ports[k]} {PERF}" for k in range(n)]
        clients = [f"timeout {CLIENT_SECS} ib_write_bw -d rxe0 -x {gidx_peer} -p {ports[k]} {PERF} {ips[k]}" for k in range(n)]
        pairs = _run_pairs(node, peer, servers, clients, ports)
    else:
        servers = [f"timeout {SERVER_SECS} ib_write_bw -d rxe0 -x {gidx_peer} -p {ports[k]} {PERF}" for k in range(n)]
        clients = [f"timeout {CLIENT_SECS} ib_write_bw -d rxe{k} -x {gidx_node} -p {ports[k]} {PERF} {peer_ip}" for k in range(n)]
        pairs = _run_pairs(peer, node, servers, clients, ports)
    return [Case("ib_write_bw", direction, k, c.ok, _why(c), c, ips[k]) for k, (_s, c) in enumerate(pairs)]


def rping(node: Guest, peer: Guest, direction: str, net: Net = SEED) -> list[Case]:
    ips, peer_ip = net.node_ips, net.peer_ip
    n = len(ips)
    ports = [18700 + k for k in range(n)]
    if direction == "peer->node":
        servers = [f"timeout {SERVER_SECS} rping -s -a {ips[k]} -p {ports[k]} -C 2" for k in range(n)]
        clients = [f"timeout {CLIENT_SECS} rping -c -a {ips[k]} -p {ports[k]} -C 2 -v" for k in range(n)]
        pairs = _run_pairs(node, peer, servers, clients, None, settle=4)
    else:
        servers = [f"timeout {SERVER_SECS} rping -s -a {peer_ip} -p {ports[k]} -C 2" for k in range(n)]
        clients = [f"timeout {CLIENT_SECS} rping -c -I {ips[k]} -a {peer_ip} -p {ports[k]} -C 2 -v" for k in range(n)]
        pairs = _run_pairs(peer, node, servers, clients, None, settle=4)
    return [Case("rping", direction, k, c.ok and "ping data" in c.out, _why(c), c, ips[k]) for k, (_s, c) in enumerate(pairs)]


def probe(node: Guest, peer: Guest, direction: str, net: Net = SEED) -> list[Case]:
    ips, peer_ip = net.node_ips, net.peer_ip
    n = len(ips)
    ports = [18800 + k for k in range(n)]
    if direction == "peer->node":
        servers = [f"{RN} probe rdma --server --source {ips[k]} --tcp-port {ports[k]} --timeout 20 --duration {SERVER_SECS * 4}" for k in range(n)]
        clients = [f"{RN} --json probe rdma {ips[k]} --source {peer_ip} --tcp-port {ports[k]} {PROBE}" for k in range(n)]
        pairs = _run_pairs(node, peer, servers, clients, ports)
    else:
        servers = [f"{RN} probe rdma --server --source {peer_ip} --tcp-port {ports[k]} --timeout 20 --duration {SERVER_SECS * 4}" for k in range(n)]
        clients = [f"{RN} --json probe rdma {peer_ip} --source {ips[k]} --tcp-port {ports[k]} {PROBE}" for k in range(n)]
        pairs = _run_pairs(peer, node, servers, clients, ports)
    return [Case("roce-net probe rdma", direction, k, c.ok, _probe_why(c), c, ips[k]) for k, (_s, c) in enumerate(pairs)]


def _probe_why(r: Result) -> str:
    """A failed probe's own one-line diagnosis (its JSON's failure.message)."""
    try:
        f = json.loads(r.out).get("failure")
    except ValueError:
        return _why(r)
    return f["message"] if f else ""


def ping(node: Guest, peer: Guest, direction: str, net: Net = SEED) -> list[Case]:
    ips, peer_ip = net.node_ips, net.peer_ip
    out = []
    for k, ip in enumerate(ips):
        cmd = f"ping -c 2 -W 3 {ip}" if direction == "peer->node" else f"ping -c 2 -W 3 -I {ip} {peer_ip}"
        r = (peer if direction == "peer->node" else node).sh(cmd, 60)
        out.append(Case("ping", direction, k, r.ok, _why(r), r, ip))
    return out


def _why(r: Result) -> str:
    if r.rc == 124:
        return _last_lines(r.text()) + f"\n(no result within {CLIENT_SECS} s: ended by timeout)"
    return _last_lines(r.text()) + f"\n(exit {r.rc})"


def _last_lines(t: str, n: int = 6) -> str:
    lines = [x for x in t.splitlines() if x.strip()]
    return "\n".join(lines[-n:])


#: What each direction means, for people: who starts the traffic, and why the
#: seed's ARP flux breaks one direction and not the other.
DIRECTIONS = {
    "peer->node": "the peer starts each test toward one of the node's four addresses",
    "node->peer": "the node starts each test from one of its four addresses toward the peer",
}


def matrix(
    node: Guest,
    peer: Guest,
    gidx_node: int,
    gidx_peer: int,
    tools: tuple[str, ...] = ("ping", "ib_write_bw", "rping", "probe"),
    net: Net = SEED,
    progress: Optional[Callable[[str], None]] = None,
) -> list[Case]:
    """The whole matrix, peer->node first: node-initiated traffic sends ARP
    from the node's own NICs and so corrects the peer's cache. PROGRESS, when
    given, hears a line as each tool starts and one with its result (the
    matrix takes minutes under TCG)."""
    cases: list[Case] = []
    runs = {
        "ping": lambda d: ping(node, peer, d, net),
        "ib_write_bw": lambda d: write_bw(node, peer, d, gidx_node, gidx_peer, net),
        "rping": lambda d: rping(node, peer, d, net),
        "probe": lambda d: probe(node, peer, d, net),
    }
    for direction in ("peer->node", "node->peer"):
        for tool in ("ping", "ib_write_bw", "rping", "probe"):
            if tool not in tools:
                continue
            if progress:
                progress(f"  {direction}: {tool} on the node's {len(net.node_ips)} NICs ...")
            t0 = time.monotonic()
            got = runs[tool](direction)
            cases += got
            if progress:
                ok = sum(c.ok for c in got)
                progress(f"  {direction}: {got[0].tool if got else tool}: {ok} of {len(got)} passed ({time.monotonic() - t0:.0f} s)")
    return cases


def counts(cases: list[Case]) -> str:
    """How many cells passed, per direction and tool: "peer->node: ping 4/4,
    ib_write_bw 1/4, ..."."""
    out = []
    for direction in ("peer->node", "node->peer"):
        cells = [c for c in cases if c.direction == direction]
        if not cells:
            continue
        tools: dict[str, list[Case]] = {}
        for c in cells:
            tools.setdefault(c.tool, []).append(c)
        out.append(f"{direction}: " + ", ".join(f"{t} {sum(c.ok for c in v)}/{len(v)}" for t, v in tools.items()))
    return "; ".join(out)


def table(cases: list[Case], words: Optional[Callable[[str], str]] = None) -> str:
    """One line per cell; under a failed one, its own last words (a probe's
    diagnosis, a tool's last output lines), whole: long lines are wrapped,
    never cut. WORDS, when given, rewrites each detail line first."""
    rows = []
    for c in cases:
        rows.append(f"  {'PASS' if c.ok else 'FAIL'}  {c.label()}")
        if not c.ok:
            for line in c.text.splitlines()[-4:]:
                text = words(line) if words else line
                rows += textwrap.wrap(
                    text, width=110, initial_indent="        ", subsequent_indent="          ", break_on_hyphens=False
                ) or [""]
    return "\n".join(rows)
