"""Shared fixtures: lab namespaces (root only) and snapshot documents.

Namespaces are named ``rnt-py-<pid>-<n>``, use addresses from 198.18.0.0/15 only,
and are removed by the fixture even when the test fails. A test that needs them
fails under ``CI=true`` when it cannot create them, and is skipped otherwise.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator, List

import pytest

sys.path.insert(0, str(Path(__file__).parent))

PREFIX = f"rnt-py-{os.getpid()}"
_counter = itertools.count()


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def cannot_run(why: str) -> None:
    """Fail under CI, skip elsewhere."""
    if in_ci():
        pytest.fail(f"CI=true but this test cannot run: {why}")
    pytest.skip(why)


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


def _can_make_netns() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if shutil.which("ip") is None:
        return "needs iproute2 (`ip`)"
    return None


@pytest.fixture
def make_netns() -> Iterator[Callable[[], Netns]]:
    """Factory of lab namespaces, all removed at teardown."""
    why = _can_make_netns()
    if why:
        cannot_run(why)
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


@pytest.fixture
def seed_lab():
    """The library's seed scenario (roce_net.Lab.seed, namespaces rnt-py-<pid>-*):
    host namespace with r0..r3 at 198.18.0.11-14/24, a peer p0 at .100, one bridge."""
    why = _can_make_netns()
    if why:
        cannot_run(why)
    import roce_net

    lab = roce_net.Lab.seed(4, tag="py")
    try:
        yield lab
    finally:
        lab.close()
