"""Shared fixtures: lab namespaces (root only) and snapshot documents.

Tests that create network namespaces are marked ``@pytest.mark.needs_root`` (as
the Rust lab tests are ``#[ignore = "needs root: ..."]``). A plain ``pytest``
reports them as skipped ("needs root: run with --needs-root"), never as passed;
``pytest --needs-root`` (what scripts/test-python.sh runs) or ``-m needs_root``
selects them, and a selected one that cannot run (not root, no ``ip``) fails.
A test that uses the ``make_netns`` or ``seed_lab`` fixture without the marker
is a collection error.

Namespaces are named ``rnt-py-<pid>-<n>``, use addresses from 198.18.0.0/15 only,
and are removed by the fixture even when the test fails.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator, List, Optional, Tuple

import pytest

sys.path.insert(0, str(Path(__file__).parent))

PREFIX = f"rnt-py-{os.getpid()}"
_counter = itertools.count()

#: Fixtures that create namespaces: a test using one must be marked needs_root.
LAB_FIXTURES = frozenset({"make_netns", "seed_lab", "ipv6_lab", "dual_stack_lab", "fleet_lab"})


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--needs-root",
        action="store_true",
        default=False,
        help="also run the tests marked needs_root (network namespaces); "
        "without root they fail, not skip",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs_root: creates network namespaces, so needs root; skipped unless "
        "selected with --needs-root (or -m needs_root), and then fails without root",
    )


def _root_selected(config: pytest.Config) -> bool:
    return bool(config.getoption("--needs-root")) or "needs_root" in (config.option.markexpr or "")


def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    selected = _root_selected(config)
    skip = pytest.mark.skip(
        reason="needs root: run with --needs-root, as root (scripts/test-python.sh does)"
    )
    for item in items:
        marked = item.get_closest_marker("needs_root") is not None
        uses = LAB_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if uses and not marked:
            raise pytest.UsageError(
                f"{item.nodeid} uses {', '.join(sorted(uses))} but is not marked "
                "@pytest.mark.needs_root"
            )
        if marked and not selected:
            item.add_marker(skip)


def _can_make_netns() -> Optional[str]:
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if shutil.which("ip") is None:
        return "needs iproute2 (`ip`)"
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    # Reached only for selected needs_root tests (unselected ones are skipped first).
    if item.get_closest_marker("needs_root") is not None:
        why = _can_make_netns()
        if why:
            pytest.fail(f"selected with --needs-root but cannot run: {why}", pytrace=False)


def cannot_run(why: str) -> None:
    """A test that cannot run fails (it never reads as a pass or a skip)."""
    pytest.fail(f"this test cannot run: {why}", pytrace=False)


def disk_tree(d: Path) -> dict:
    """Every file and directory under ``d``: its mode, and a file's bytes (a
    root compared before and after is the same byte for byte, mode for mode,
    with no file or directory added or left)."""
    return {
        p.relative_to(d): (p.lstat().st_mode, p.read_bytes() if p.is_file() else None)
        for p in sorted(d.rglob("*"))
    }


def ip(*args: str) -> str:
    return subprocess.run(["ip", *args], check=True, capture_output=True, text=True).stdout


class Netns:
    """A throwaway network namespace with dummy NICs; removed by the fixture."""

    def __init__(self, name: str) -> None:
        self.name = name
        ip("netns", "add", name)
        ip("-n", name, "link", "set", "lo", "up")

    def add_nic(self, ifname: str, addr: str) -> None:
        """A veth pair inside the namespace (no dummy module needed); `ifname` gets
        the address, its peer `<ifname>p` stays unaddressed."""
        ip("-n", self.name, "link", "add", ifname, "type", "veth", "peer", "name", ifname + "p")
        ip("-n", self.name, "addr", "add", addr, "dev", ifname)
        ip("-n", self.name, "link", "set", ifname + "p", "up")
        ip("-n", self.name, "link", "set", ifname, "up")

    def run(self, *args: str) -> str:
        return ip("-n", self.name, *args)

    def remove(self) -> None:
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True)


@pytest.fixture
def make_netns() -> Iterator[Callable[[], Netns]]:
    """Factory of lab namespaces, all removed at teardown (needs_root tests only)."""
    made: List[Netns] = []

    def make() -> Netns:
        ns = Netns(f"{PREFIX}-{next(_counter)}")
        made.append(ns)
        return ns

    try:
        yield make
    finally:
        for ns in made:
            ns.remove()


def _seed(family: str) -> Iterator["object"]:
    import roce_net

    lab = roce_net.Lab.seed(4, tag="py", family=family)
    try:
        yield lab
    finally:
        lab.close()


@pytest.fixture
def seed_lab():
    """The library's seed scenario (roce_net.Lab.seed, namespaces rnt-py-<pid>-*):
    host namespace with r0..r3 at 198.18.0.11-14/24, a peer p0 at .100, one bridge
    (needs_root tests only)."""
    yield from _seed("ipv4")


@pytest.fixture
def ipv6_lab():
    """The seed scenario in IPv6 only (``Lab.seed(family="ipv6")``): r0..r3 at
    fd00:198:18::11-14/64, the peer p0 at fd00:198:18::100 (needs_root tests only)."""
    yield from _seed("ipv6")


@pytest.fixture
def dual_stack_lab():
    """The seed scenario dual stack (``Lab.seed(family="both")``): each NIC has
    its IPv4 and its IPv6 address (needs_root tests only)."""
    yield from _seed("both")


def nic_addrs(nics, family: str) -> List[Tuple[str, str]]:
    """``(nic, address)`` of every address of ``family`` ("inet"/"inet6") of the lab NICs."""
    v6 = family == "inet6"
    return [(n.name, a.split("/")[0]) for n in nics for a in n.addresses if (":" in a) == v6]


def route_get(lab, family: str) -> List[Tuple[str, str, int]]:
    """iproute2's own answer, in the lab's host namespace, to ``ip [-6] route
    get <peer> from <addr>`` for each NIC address of ``family``: ``(address,
    device, table)`` (``-N``: the table as a number; 254 when none is printed)."""
    ((_, peer),) = nic_addrs([lab.peer_nic], family)
    fam = "-6" if family == "inet6" else "-4"
    out = []
    for _, a in nic_addrs(lab.nics, family):
        (r,) = json.loads(ip("-n", lab.host_ns, "-N", "-j", fam, "route", "get", peer, "from", a))
        out.append((a, r["dev"], int(r.get("table", 254))))
    return out


def rails_view(st) -> dict:
    """Everything an apply changes, comparable with ``==``, in both families:
    rules, routes (but the ones the kernel makes for IPv6 addresses: link-local
    ones appear on their own as the lab settles), sysctls, table names."""
    return {
        "rules": sorted(
            (r.family, r.priority, str(r.src), str(r.dst), r.table, r.protocol) for r in st.rules
        ),
        "routes": sorted(
            (r.family, r.table, r.type, r.dst, str(r.dev), str(r.prefsrc), str(r.gateway),
             r.protocol, str(r.metric))
            for r in st.routes
            if not (r.family == "inet6" and r.protocol == 2)
        ),
        "sysctls": st.sysctls.to_dict(),
        "table_names": st.table_names,
    }


@contextlib.contextmanager
def lab_fleet(hosts: int, nics: int, tag: str) -> Iterator["object"]:
    """roce_net.Lab.fleet(hosts, nics): namespaces rnt-<tag>-<pid>-<n>-{sw,h1..},
    host k's NIC i at 198.18.k.(11 + i)/16 on one switch, its switch port
    s<(k-1)*nics + i>; removed even on failure, and checked gone (needs_root
    tests only; a test that cannot make namespaces fails)."""
    import roce_net

    why = _can_make_netns()
    if why:
        cannot_run(why)
    lab = roce_net.Lab.fleet(hosts, nics, tag=tag)
    names = lab.namespaces
    try:
        yield lab
    finally:
        lab.close()
        left = [n for n in names if os.path.exists(f"/run/netns/{n}")]
        assert not left, f"namespaces left behind: {left}"
