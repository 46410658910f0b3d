"""probe_rdma and probe_rdma_server from Python, and the roce_net_rdma_probe
Ansible module, against peers that trickle one byte at a time: each ends
within its bound (a client at its timeout, a server at its duration plus its
timeout), not when the peer stops: its own reason says so, and the peer, which
would trickle for 30 s, sees its connection closed first. No test here holds
a duration (a loaded machine would fail it).

Two lab namespaces (roce_net.Lab.fleet(2, 1): r0 at 198.18.1.11 and
198.18.2.11), each host's RDMA device (mlx5_0 on r0, the RoCE v2 GID of its
address) in a sysfs tree written here in the kernel's formats, opened through
the stand-in libibverbs of the CLI's tests (tests/fixtures/rdma/
libibverbs-standin.c, compiled here with cc against libibverbs-dev's verbs.h:
every verb succeeds, nothing ever completes), loaded with ``libibverbs=``.
The trickling peers are small Python programs run in the other namespace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest

import roce_net
from conftest import _can_make_netns, cannot_run
from test_ansible_fleet import _bin, ansible_env

ROOT = Path(__file__).resolve().parents[2]
STANDIN = ROOT / "tests" / "fixtures" / "rdma" / "libibverbs-standin.c"
SERVER, CLIENT = "198.18.1.11", "198.18.2.11"

#: A peer that trickles: as a server it accepts one connection, as a client it
#: connects (retrying until the server listens); then one byte every 50 ms
#: for at most 30 s, never a newline. Its last line says how it ended: `closed
#: by the peer` (the side under test closed the connection while it still
#: trickled) or `gave up` (30 s passed).
TRICKLE = """
import socket, sys, time
role, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
end = time.monotonic() + 30
if role == "server":
    l = socket.create_server((addr, port))
    print("listening", flush=True)
    l.settimeout(30)
    s, _ = l.accept()
else:
    while True:
        try:
            s = socket.create_connection((addr, port), timeout=2)
            break
        except OSError:
            if time.monotonic() > end:
                sys.exit(1)
            time.sleep(0.05)
    print("connected", flush=True)
try:
    while time.monotonic() < end:
        s.send(b"x")
        time.sleep(0.05)
    print("gave up", flush=True)
except OSError:
    print("closed by the peer", flush=True)
"""


def write_sysfs(root: Path, netdev: str, v4: str) -> None:
    """mlx5_0 port 1 on ``netdev``, ACTIVE, GIDs 0/1 link-local v1/v2 and 2/3
    the IPv4-mapped ``v4`` v1/v2, as the kernel prints them."""
    port = root / "class" / "infiniband" / "mlx5_0" / "ports" / "1"
    for d in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
        (port / d).mkdir(parents=True)

    def w(rel: str, text: str) -> None:
        (port / rel).write_text(text + "\n")

    w("state", "4: ACTIVE")
    w("phys_state", "5: LinkUp")
    w("link_layer", "Ethernet")
    w("rate", "100 Gb/sec (4X EDR)")
    a, b, c, d = (int(x) for x in v4.split("."))
    mapped = "0000:0000:0000:0000:0000:ffff:%04x:%04x" % (a << 8 | b, c << 8 | d)
    ll = "fe80:0000:0000:0000:0000:0000:0000:0001"
    for i, (gid, kind) in enumerate([(ll, "IB/RoCE v1"), (ll, "RoCE v2"), (mapped, "IB/RoCE v1"), (mapped, "RoCE v2")]):
        w(f"gids/{i}", gid)
        w(f"gid_attrs/types/{i}", kind)
        w(f"gid_attrs/ndevs/{i}", netdev)
    for i in range(4, 8):
        w(f"gids/{i}", ":".join(["0000"] * 8))


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Dict[str, object]]:
    """The two hosts, their sysfs trees and the stand-in library."""
    why = _can_make_netns()
    if why:
        cannot_run(why)
    so = tmp_path / "libibverbs-standin.so"
    r = subprocess.run(["cc", "-shared", "-fPIC", "-Wall", "-Werror", "-o", str(so), str(STANDIN)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail("compiling the stand-in libibverbs failed (install gcc and libibverbs-dev): " + r.stderr)
    lab = roce_net.Lab.fleet(2, 1, tag="py-rdmah")
    names = lab.namespaces
    h1, h2 = lab.fleet_hosts
    for ns, addr in ((h1, SERVER), (h2, CLIENT)):
        write_sysfs(tmp_path / ns, "r0", addr)
    try:
        yield dict(lab=lab, server=h1, client=h2, so=str(so), tmp=tmp_path)
    finally:
        lab.close()
        left = [n for n in names if os.path.exists(f"/run/netns/{n}")]
        assert not left, f"namespaces left behind: {left}"


def trickler(ns: str, role: str, addr: str, port: int = 18520) -> subprocess.Popen:
    """A trickling peer in namespace ``ns``, started and ready."""
    p = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", TRICKLE, role, addr, str(port)],
                         stdout=subprocess.PIPE, text=True)
    if role == "server":
        assert p.stdout is not None and p.stdout.readline().strip() == "listening"
    return p


def ended(p: subprocess.Popen) -> str:
    """How the trickling peer ended, once it has (by itself: it notices the
    connection closed at its next byte, and gives up after 30 s)."""
    out, _ = p.communicate(timeout=60)
    lines = out.strip().splitlines()
    return lines[-1] if lines else f"no output (exit {p.returncode})"


def stop(p: subprocess.Popen) -> None:
    p.kill()
    p.wait()


def host(pair: Dict[str, object], role: str) -> roce_net.Host:
    ns = str(pair[role])
    return roce_net.Host(netns=ns, sysfs_root=str(Path(str(pair["tmp"])) / ns))


@pytest.mark.needs_root
def test_probe_rdma_ends_at_its_timeout_against_a_trickling_server(pair):
    t = trickler(str(pair["server"]), "server", SERVER)
    try:
        r = roce_net.probe_rdma(host(pair, "client"), SERVER, source=CLIENT, libibverbs=pair["so"], timeout=2.0)
        peer = ended(t)
    finally:
        stop(t)
    assert r.failure is not None and r.failure.cause == "timeout", r
    assert r.failure.stage == "exchange"
    # Its own timeout ended it, while the peer still trickled: the peer saw the
    # connection closed (not the probe waiting for the peer to give up).
    assert peer == "closed by the peer", peer


@pytest.mark.needs_root
def test_probe_rdma_server_ends_within_duration_and_timeout_against_a_trickling_client(pair):
    out: List[object] = []
    th = threading.Thread(target=lambda: out.append(roce_net.probe_rdma_server(
        host(pair, "server"), source=SERVER, libibverbs=pair["so"], duration=4.0, timeout=2.0)))
    th.start()
    t = trickler(str(pair["client"]), "client", SERVER)
    try:
        th.join(30)
        peer = ended(t)
    finally:
        stop(t)
    assert not th.is_alive(), "the server still ran after 30 s"
    (r,) = out
    assert isinstance(r, roce_net.RdmaServerResult)
    # Never a client: refused at its timeout (or, had it come late, when the
    # server stopped at its duration).
    assert r.sessions == () and r.rejected_count == 1 and r.stopped == "duration", r
    assert r.rejected[0].reason.startswith(
        ("no greeting within", "the connection closed while waiting for its greeting")), r.rejected
    assert r.listen == f"{SERVER}:18520"
    # The server closed the client's connection while the client still
    # trickled: its timeout, not the client giving up, ended that session.
    assert peer == "closed by the peer", peer


def module(pair: Dict[str, object], args: Dict[str, object]) -> Tuple[Dict[str, object], float]:
    """Run roce_net_rdma_probe once with ``args`` through ``ansible`` (local
    connection, this interpreter): its result and the command's wall time."""
    tmp = Path(str(pair["tmp"]))
    env = ansible_env(tmp)
    t0 = time.monotonic()
    r = subprocess.run(
        [_bin("ansible"), "localhost", "-i", "localhost,", "-c", "local", "-o",
         "-e", f"ansible_python_interpreter={sys.executable}",
         "-m", "roce_net.roce.roce_net_rdma_probe", "-a", json.dumps(args)],
        env=env, capture_output=True, text=True, timeout=120,
    )
    took = time.monotonic() - t0
    line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    assert " => " in line or " | " in line, r.stdout + r.stderr
    return json.loads(line.split(" => ", 1)[1] if " => " in line else line.split(" | ", 2)[-1]), took


@pytest.mark.needs_root
def test_the_ansible_module_ends_within_its_bound_against_trickling_peers(pair, capsys):
    common = dict(libibverbs=pair["so"], timeout=2.0)
    # A client task against a server that trickles: its probe ends at its timeout.
    t = trickler(str(pair["server"]), "server", SERVER)
    try:
        res, took = module(pair, dict(common, mode="client", netns=pair["client"],
                                      sysfs_root=str(Path(str(pair["tmp"])) / str(pair["client"])),
                                      peers=[SERVER], source=CLIENT))
        peer = ended(t)
    finally:
        stop(t)
    (x,) = res["results"]
    assert x["status"] == "failed" and x["cause"] == "timeout", res
    # Its own timeout ended it while the server still trickled.
    assert peer == "closed by the peer", peer
    # A server task with a client that trickles: it ends at its duration.
    server_args = dict(common, mode="server", netns=pair["server"],
                       sysfs_root=str(Path(str(pair["tmp"])) / str(pair["server"])),
                       source=SERVER, duration=4.0)
    out: List[Tuple[Dict[str, object], float]] = []
    th = threading.Thread(target=lambda: out.append(module(pair, server_args)))
    th.start()
    t = trickler(str(pair["client"]), "client", SERVER)
    try:
        th.join(120)
        peer = ended(t)
    finally:
        stop(t)
    ((srv, stook),) = out
    assert srv["rejected_count"] == 1 and srv["sessions"] == [] and srv["stopped"] == "duration", srv
    assert peer == "closed by the peer", peer
    with capsys.disabled():
        print("\nansible rdma probe against trickling peers: client task %.1f s, server task %.1f s" % (took, stook))
