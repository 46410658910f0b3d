"""The lab commands of examples/ansible/README.md, run as printed: the lab the
example's lab.sh builds (two hosts in namespaces), site.yml on one host in
check mode, fleet.yml on both, mesh.yml over both (passing once fixed), the
lab removed. Every write stays in the lab's
namespaces and its private roots (lab/etc/<host>, lab/run/<host>): the
README's earlier lab line gave no etc_root or state_dir, so a run in a
namespace would have written the machine's own /etc/iproute2 and /run/roce-net.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import _can_make_netns, cannot_run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "ansible"
README = EXAMPLES / "README.md"


def lab_block() -> str:
    """The README's fenced block after "As root" under "On a lab": the lines a
    user pastes."""
    text = README.read_text()
    part = text.split("## On a lab", 1)[1]
    m = re.search(r"As root.*?```sh\n(.*?)```", part, re.S)
    assert m, "no lab block in examples/ansible/README.md"
    return m.group(1)


def tree(p: Path) -> dict[str, bytes]:
    """Every file under P (relative path -> content); {} when P is missing."""
    if not p.exists():
        return {}
    return {str(f.relative_to(p)): f.read_bytes() for f in sorted(p.rglob("*")) if f.is_file()}


@pytest.mark.needs_root
def test_the_lab_commands_of_the_ansible_examples_run_as_printed(tmp_path, capsys):
    why = _can_make_netns()
    if why:
        cannot_run(why)
    block = lab_block()
    lines = [x.split("#", 1)[0].strip() for x in block.splitlines()]
    lines = [x for x in lines if x]
    assert lines[0] == "cd examples/ansible" and lines[1] == "./lab.sh" and lines[-1] == "./lab.sh --remove", lines
    assert any("site.yml" in x for x in lines) and any("fleet.yml" in x for x in lines), lines
    # What the machine's own namespace has where roce-net would write without
    # private roots (this run's private /run is the test's own: scripts/test-python.sh).
    etc_names = Path("/etc/iproute2/rt_tables.d/roce-net.conf")
    machine_before = (etc_names.read_bytes() if etc_names.exists() else None, tree(Path("/run/roce-net")))
    # The Python running ansible-playbook (this one) has roce_net, as the README
    # asks; ansible's own files go to the test's directory.
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        ANSIBLE_REMOTE_TEMP=str(tmp_path / "ansible-remote-tmp"),
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
        ANSIBLE_NOCOLOR="1",
    )
    t0 = time.monotonic()
    # The block as printed, one shell, stopping at the first failure; the lab
    # is removed whatever happens.
    run = subprocess.run(["bash", "-e", "-c", block], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    seconds = time.monotonic() - t0
    left = [n for n in ("rnt-ex-sw", "rnt-ex-h1", "rnt-ex-h2") if os.path.exists(f"/run/netns/{n}")]
    if run.returncode != 0 or left:
        subprocess.run([str(EXAMPLES / "lab.sh"), "--remove"], capture_output=True)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-6000:]
    assert not left, f"the lab was not removed: {left}\n{out[-3000:]}"
    assert not (EXAMPLES / "lab").exists()
    recaps = re.findall(r"^(h\d)\s*:\s*ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0", out, re.M)
    assert [h for h, _ in recaps] == ["h1", "h1", "h2", "h1", "h2"], out[-4000:]
    # The fleet run changed both hosts, and its last report found nothing.
    assert all(int(c) >= 1 for _, c in recaps[1:3]), recaps
    assert "Fleet report after" in out and "fatal:" not in out, out[-4000:]
    # The mesh over the fixed lab passed, changing nothing.
    assert all(int(c) == 0 for _, c in recaps[3:]), recaps
    assert re.search(r'"msg": "pass: every probed pair passed: [1-9]', out), out[-4000:]
    # Nothing of it reached the machine's own /etc/iproute2 or /run/roce-net.
    machine_after = (etc_names.read_bytes() if etc_names.exists() else None, tree(Path("/run/roce-net")))
    assert machine_after == machine_before
    with capsys.disabled():
        print(f"\nansible examples' lab block: {seconds:.1f} s")
