"""`scripts/vm-lab.sh --remove DIR` on a kept bed: DIR relative or reached
through a link still stops the bed's guests before their namespace and disks
go (it matched the guests by the text given, so they kept running while their
namespace and disk were deleted), and a bed.json whose `tmp` or `ns` is not the
bed's own is refused with nothing touched.

No guest boots here: each "guest" is a stand-in for qemu, a process group
leader in the bed's namespace whose command line names the bed's directory as
qemu's does (-drive file=<dir>/...), which is what `vmbed.remove` goes by.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

import vmbed
from conftest import REPO, cannot_run

SEQ = iter(range(100, 1000))


class FakeBed:
    """A kept bed: its directory (made as `Bed` makes it), its namespace, two
    running stand-ins for its guests, and its bed.json."""

    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="rnt-vm-"))
        self.ns = f"rnt-vm-{os.getpid()}-{next(SEQ)}"
        subprocess.run(["ip", "netns", "add", self.ns], check=True)
        self.procs = [
            subprocess.Popen(
                ["ip", "netns", "exec", self.ns, sys.executable, "-c", "import time; time.sleep(600)",
                 "qemu-system-x86_64", "-drive", f"file={self.tmp}/{name}/disk.qcow2"],
                start_new_session=True,
            )
            for name in ("node", "peer")
        ]
        for name in ("node", "peer"):
            (self.tmp / name).mkdir()
            (self.tmp / name / "disk.qcow2").write_bytes(b"overlay")
        deadline = time.monotonic() + 10
        while not all(vmbed._is_our_qemu(p.pid, str(self.tmp)) for p in self.procs):
            assert time.monotonic() < deadline, "the stand-ins did not start"
            time.sleep(0.05)
        self.save()

    def save(self, **change: object) -> None:
        st = {
            "ns": self.ns,
            "ns_inode": vmbed._netns_inode(f"/run/netns/{self.ns}"),
            "tmp": str(self.tmp),
            "image": "/nonexistent/base.qcow2",
            "accel": "tcg",
            "guests": [{"name": n, "pid": p.pid, "macs": [], "image": None} for n, p in zip(("node", "peer"), self.procs)],
        }
        st.update(change)
        (self.tmp / "bed.json").write_text(json.dumps(st))

    def running(self) -> bool:
        return all(p.poll() is None for p in self.procs)

    def gone(self) -> bool:
        return all(p.poll() is not None for p in self.procs) and not Path(f"/run/netns/{self.ns}").exists() and not self.tmp.exists()

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, 9)
            p.wait()
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)
        subprocess.run(["rm", "-rf", str(self.tmp)])


@pytest.fixture
def beds() -> Iterator[list[FakeBed]]:
    if os.geteuid() != 0:
        cannot_run("needs root (network namespaces)")
    made: list[FakeBed] = []
    try:
        yield made
    finally:
        for b in made:
            b.close()


def remove(arg: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "scripts/vm-lab.sh"), "--remove", arg], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_remove_given_a_relative_path_or_a_link_stops_the_guests_first(beds, tmp_path):
    rel = FakeBed()
    beds.append(rel)
    # Relative, not as it is written in the guests' command lines.
    r = remove(f"./{rel.tmp.name}/", rel.tmp.parent)
    assert r.returncode == 0, r.stdout + r.stderr
    assert rel.gone(), f"left: running={[p.poll() for p in rel.procs]}, ns={Path(f'/run/netns/{rel.ns}').exists()}"

    linked = FakeBed()
    beds.append(linked)
    link = tmp_path / "kept-demo"
    link.symlink_to(linked.tmp)
    r = remove(str(link), tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert linked.gone()


def test_a_bed_json_naming_what_is_not_the_beds_is_refused_with_nothing_touched(beds, tmp_path):
    victim = FakeBed()  # another bed, running
    beds.append(victim)
    bed = FakeBed()
    beds.append(bed)
    decoy_dir = tmp_path / "precious"
    decoy_dir.mkdir()
    (decoy_dir / "data").write_text("keep me")
    cases = [
        # Its tmp is another directory.
        dict(tmp=str(decoy_dir)),
        # Its ns is another bed's namespace (a name of the bed's form).
        dict(ns=victim.ns),
        # Its ns is not a bed's namespace at all.
        dict(ns="rnt-c8-1-1-lab", ns_inode=None),
    ]
    for change in cases:
        bed.save(**change)
        r = remove(str(bed.tmp), tmp_path)
        assert r.returncode != 0 and "nothing removed" in r.stderr, (change, r.stdout + r.stderr)
        assert bed.running() and victim.running(), change
        assert bed.tmp.exists() and decoy_dir.exists() and (decoy_dir / "data").read_text() == "keep me"
        assert Path(f"/run/netns/{victim.ns}").exists() and Path(f"/run/netns/{bed.ns}").exists()
    bed.save()
    r = remove(str(bed.tmp), tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert bed.gone() and victim.running()
