"""The VM tier: Debian guests under qemu with Soft-RoCE (docs/vm.md).

Run by scripts/test-vm.sh (as root). The guests boot once per run (session
fixtures) and every scenario reuses them. Under CI=true a VM test that cannot
run fails; outside CI it is skipped with what is missing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterator, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts/vm"))

import seed  # noqa: E402
import vmbed  # noqa: E402

IN_CI = os.environ.get("CI") == "true"


def cannot_run(why: str) -> None:
    if IN_CI:
        pytest.fail(f"the VM tier cannot run under CI=true: {why}")
    pytest.skip(f"the VM tier cannot run here: {why}")


def dist(pattern: str) -> Optional[Path]:
    """The newest shipped artifact matching PATTERN in dist/ (ROCE_NET_VM_DIST)."""
    d = Path(os.environ.get("ROCE_NET_VM_DIST", vmbed.REPO / "dist"))
    found = sorted(d.glob(pattern))
    return found[-1] if found else None


def ansible_and_wheel() -> Path:
    """The roce_net wheel for Ansible's nodes, once this Python has
    ansible-core too (what the Ansible modules of the VM tier need)."""
    whl = dist("roce_net-*.whl")
    if whl is None:
        cannot_run("no roce_net wheel in dist/ (scripts/build-artifacts.sh wheel, run by scripts/test-python.sh)")
    try:
        import ansible  # noqa: F401
    except ImportError:
        cannot_run("ansible-core is not installed in this Python (scripts/test-python.sh installs it into .venv)")
    assert whl is not None
    return whl


def share_files() -> dict[str, Path]:
    mt = REPO / "tests/fixtures/mlnx-tools"
    return {
        "bin/roce-net": vmbed.roce_net_binary(),
        "mlnx-tools/show_gids": mt / "show_gids-8fbfd9c",
        "mlnx-tools/show_gids-adaec78": mt / "show_gids-adaec78",
        "mlnx-tools/ibdev2netdev": mt / "ibdev2netdev-c3aad38",
    }


@pytest.fixture(scope="session")
def seed_bed() -> Iterator[tuple[Optional[vmbed.Bed], vmbed.Guest, vmbed.Guest]]:
    """The seed's two guests, booted once: a node with four NICs and a peer
    with one, on one bridge, rxe on every NIC. ROCE_NET_VM_ATTACH=DIR reuses
    the guests a `scripts/vm-lab.sh --keep` left in DIR instead (for working on
    the tests; they are left running)."""
    kept = os.environ.get("ROCE_NET_VM_ATTACH")
    if kept:
        g = vmbed.attach(Path(kept))
        yield None, g["node"], g["peer"]
        return
    try:
        bed = vmbed.Bed(release="bookworm", share_files=share_files())
        bed.__enter__()
    except vmbed.VmError as e:
        cannot_run(str(e))
        raise
    try:
        node, peer = seed.make(bed)
        bed.boot()
        seed.nic_setup(node, seed.NODE_IPS)
        seed.nic_setup(peer, [seed.PEER_IP])
        seed.wait_active(node, len(seed.NODE_IPS))
        seed.wait_active(peer, 1)
        yield bed, node, peer
    finally:
        bed.close()
