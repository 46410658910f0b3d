"""An older node: Debian 11 (kernel 5.10, glibc 2.31, Python 3.9), standing in
for RHEL/Rocky 8 and Ubuntu 20.04 (docs/vm.md, docs/install.md).

Kernel 5.10 has no SO_NETNS_COOKIE (5.14): apply, rollback, a crash mid-apply
and the confirm watchdog must work in the initial namespace all the same. The
shipped artifacts (the portable CLI, the .deb installed with apt, the abi3
wheel on the node's own Python 3.9) must install and run there.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Iterator

import pytest

import seed
import vmbed
from conftest import IN_CI, cannot_run, dist

IPS = ["198.18.1.11", "198.18.1.12"]
MACS = ["52:54:00:12:01:11", "52:54:00:12:01:12"]
RN = seed.RN


@pytest.fixture(scope="module")
def old() -> Iterator[vmbed.Guest]:
    kept = os.environ.get("ROCE_NET_VM_ATTACH_OLD")
    if kept:
        g = vmbed.attach(Path(kept))["old"]
        seed.nic_setup(g, IPS)
        seed.wait_active(g, len(IPS))
        yield g
        return
    files = {"bin/roce-net": vmbed.roce_net_binary()}
    for name, pattern in (("whl", "roce_net-*.whl"), ("deb", "roce-net_*.deb")):
        p = dist(pattern)
        if p is not None:
            files[f"dist/{p.name}"] = p
    try:
        bed = vmbed.Bed(release="bullseye", share_files=files)
        bed.__enter__()
    except vmbed.VmError as e:
        cannot_run(str(e))
        raise
    try:
        g = bed.guest("old", MACS)
        bed.boot()
        seed.nic_setup(g, IPS)
        seed.wait_active(g, len(IPS))
        yield g
    finally:
        bed.close()


def routing(g: vmbed.Guest) -> str:
    """What apply changes, as text that compares with ==."""
    return g.ok(
        "ip rule show; ip route show table all | grep -v '^local\\|^broadcast\\|^multicast\\|fe80\\|ff00' ;"
        " sysctl -n net.ipv4.conf.all.arp_ignore net.ipv4.conf.all.arp_announce"
        " net.ipv4.conf.eth0.arp_ignore net.ipv4.conf.eth1.arp_announce"
    )


def test_the_guest_is_the_old_generation_without_netns_cookies(old):
    assert old.ok("uname -r").startswith("5.10."), old.ok("uname -r")
    assert "2.31" in old.ok("ldd --version | head -1")
    assert old.ok("python3 -c 'import sys; print(sys.version_info[:2])'").strip() == "(3, 9)"
    # SO_NETNS_COOKIE (71) is refused by this kernel.
    r = old.sh("python3 -c 'import socket; socket.socket().getsockopt(socket.SOL_SOCKET, 71, 8)'")
    assert not r.ok and "Protocol not available" in r.text(), r.text()
    assert old.ok(f"{RN} --version").startswith("roce-net ")


def test_apply_rollback_and_a_crash_mid_apply_in_the_initial_namespace(old):
    prior = routing(old)
    r = old.sh(f"{RN} apply --yes", 300)
    print(r.text())
    assert r.ok, r.text()
    applied = routing(old)
    assert applied != prior
    assert "applied and kept" in old.ok(f"{RN} status")
    r = old.sh(f"{RN} rollback", 300)
    assert r.ok, r.text()
    assert routing(old) == prior
    # Killed at points spread over the apply: the host ends exactly prior or
    # exactly applied, and rollback (when there is a journal) ends prior.
    for delay in (0.3, 0.8, 1.5, 3.0):
        old.ok(
            f"{RN} apply --yes >/dev/null 2>&1 & pid=$!; sleep {delay}; kill -9 $pid; wait $pid; true",
            300,
        )
        now = routing(old)
        assert now in (prior, applied), f"kill -9 after {delay} s left a mixed state:\n{now}"
        r = old.sh(f"{RN} rollback", 300)
        assert r.rc in (0, 66), r.text()
        assert routing(old) == prior, f"after kill -9 at {delay} s and rollback"


def test_the_confirm_watchdog_rolls_back_on_the_old_kernel(old):
    prior = routing(old)
    r = old.sh(f"{RN} apply --yes --confirm-timeout 15", 300)
    assert r.ok, r.text()
    assert routing(old) != prior
    deadline = time.monotonic() + 120
    while routing(old) != prior:
        assert time.monotonic() < deadline, "the watchdog did not roll back within 120 s"
        time.sleep(3)
    st = old.ok(f"{RN} status")
    print(st)
    assert "rolled back" in st and "watchdog" in st, st


def test_the_artifacts_install_and_run_on_debian_11(old):
    whl, deb = dist("roce_net-*.whl"), dist("roce-net_*.deb")
    if whl is None or deb is None:
        if IN_CI:
            pytest.fail("no wheel or .deb in dist/: scripts/build-artifacts.sh builds them")
        pytest.skip("no wheel or .deb in dist/ (scripts/build-artifacts.sh builds them)")
    r = old.sh(f"apt-get install -y -q /mnt/roce-net/dist/{deb.name}", 300)
    assert r.ok, r.text()
    assert old.ok("/usr/bin/roce-net --version").startswith("roce-net ")
    assert json.loads(old.ok("/usr/bin/roce-net --json doctor; true"))["host"] == "old"
    # The node's own pip (20.3) and Python 3.9, into a directory of its own.
    r = old.sh(f"python3 -m pip install --no-index -q --target /tmp/rn /mnt/roce-net/dist/{whl.name}", 300)
    assert r.ok, r.text()
    out = old.ok(
        "PYTHONPATH=/tmp/rn python3 -c 'import roce_net, sys; s = roce_net.Host().snapshot(); "
        "print(sys.version_info[:2], len(roce_net.doctor(s)), sorted(i.name for i in s.interfaces))'"
    )
    print(out)
    assert out.startswith("(3, 9)") and "eth0" in out and "eth1" in out, out
