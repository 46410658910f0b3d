"""examples/ansible/mesh.yml against a lab fleet: three host namespaces with
two NICs each on one switch, each an Ansible host whose modules run inside its
namespace. --check lists what each node would probe and sends nothing (no
neighbour entry appears anywhere); the fleet, fixed, passes and result_dir
holds the merged report and every node's result; with one NIC's switch port
down the play fails naming exactly that NIC."""

from __future__ import annotations

import json
import re
import sys
import subprocess
import time
from pathlib import Path
from typing import Dict, List

import pytest

import roce_net
from conftest import lab_fleet
from test_ansible_fleet import EXAMPLES, _bin, ansible_env

HOSTS, NICS = 3, 2


@pytest.fixture
def mesh_fleet():
    """roce_net.Lab.fleet(3, 2): host k's NICs r0, r1 at 198.18.k.11/16 and
    .12/16; removed even on failure."""
    with lab_fleet(HOSTS, NICS, "py-amesh") as lab:
        yield lab


def inventory(lab: roce_net.Lab, tmp: Path) -> Path:
    lines = ["[fleet]"]
    for k, ns in enumerate(lab.fleet_hosts, start=1):
        lines.append(f"h{k} roce_netns={ns} etc_root={tmp}/etc/h{k}")
    lines += ["", "[fleet:vars]", "ansible_connection=local", f"ansible_python_interpreter={sys.executable}"]
    inv = tmp / "inventory.ini"
    inv.write_text("\n".join(lines) + "\n")
    return inv


#: Short bounds: the lab's links answer in microseconds (two rounds of 1.9 s); the
#: start leaves room for three module launches on a loaded CI machine (a node
#: that starts after its slot skips it, and the test then fails).
FAST = ["-e", "mesh_start_in=8", "-e", "mesh_rounds=2", "-e", "mesh_neighbor_ms=300", "-e", "mesh_ip_ms=300",
        "-e", '{"mesh_levels": ["neighbor", "ip"]}']


def play(inv: Path, tmp: Path, *extra: str) -> Dict[str, object]:
    t0 = time.monotonic()
    r = subprocess.run(
        [_bin("ansible-playbook"), "-i", str(inv), "-f", str(HOSTS), str(EXAMPLES / "mesh.yml"), *FAST, *extra],
        cwd=EXAMPLES, env=ansible_env(tmp), capture_output=True, text=True, timeout=600,
    )
    return {"rc": r.returncode, "out": r.stdout + r.stderr, "seconds": time.monotonic() - t0}


def neighbours(lab: roce_net.Lab) -> List[str]:
    out = []
    for ns in lab.fleet_hosts:
        for line in subprocess.run(["ip", "-n", ns, "neigh", "show"], capture_output=True, text=True,
                                   check=True).stdout.splitlines():
            out.append(f"{ns}: {line}")
    return out


@pytest.mark.needs_root
def test_mesh_playbook_checks_passes_when_fixed_and_names_a_pulled_cable(mesh_fleet, tmp_path, capsys):
    lab = mesh_fleet
    inv = inventory(lab, tmp_path)
    labels = []
    for k, ns in enumerate(lab.fleet_hosts, start=1):
        (tmp_path / "etc" / f"h{k}").mkdir(parents=True)
        h = roce_net.Host(netns=ns, etc_root=tmp_path / "etc" / f"h{k}")
        st = h.snapshot()
        labels.append(f"{st.hostname}:{ns}")
        h.apply(roce_net.plan(st, roce_net.Policy()), state_dir=tmp_path / "run" / f"h{k}")
        subprocess.run(["ip", "-n", ns, "neigh", "flush", "all"], check=True)

    # --check: every node says what it would probe, nothing is sent (a probe,
    # even an unanswered one, leaves a neighbour entry on its sender).
    check = play(inv, tmp_path, "--check", "-e", f"result_dir={tmp_path / 'check'}")
    assert check["rc"] == 0, check["out"][-4000:]
    assert re.search(r"would probe \d+ and answer \d+ probe\(s\) \(check mode: nothing sent\)", check["out"]), check["out"][-3000:]
    assert "round 1: r0 -> " in check["out"], check["out"][-3000:]
    assert neighbours(lab) == []
    assert not (tmp_path / "check").exists()

    out_dir = tmp_path / "pass"
    out_dir.mkdir()
    fixed = play(inv, tmp_path, "-e", f"result_dir={out_dir}")
    assert fixed["rc"] == 0, fixed["out"][-4000:]
    report = json.loads((out_dir / "mesh-report.json").read_text())
    assert report["verdict"] == "pass" and report["faults"] == [], report["message"]
    assert report["summary"]["results"] == HOSTS and report["summary"]["failed"] == 0
    assert report["summary"]["passed"] == report["summary"]["probes"] > 0
    # Each node's own result beside the report, under its inventory name.
    for k, label in enumerate(labels, start=1):
        node = json.loads((out_dir / f"mesh-result-h{k}.json").read_text())
        assert node["host"] == label and node["probes"], node
        assert all(lv["status"] == "pass" for pr in node["probes"] for lv in pr["levels"]), node["probes"]

    # Host 3's r1: its switch port down (Lab.fleet: host k's NIC i is port
    # s<(k-1)*NICS + i> in the switch namespace).
    subprocess.run(["ip", "-n", lab.switch_ns, "link", "set", "dev", f"s{2 * NICS + 1}", "down"], check=True)
    out_dir = tmp_path / "fail"
    out_dir.mkdir()
    broken = play(inv, tmp_path, "-e", f"result_dir={out_dir}")
    assert broken["rc"] != 0, broken["out"][-4000:]
    assert f"fail: 1 fault(s): nic {labels[2]} r1 link-down" in broken["out"], broken["out"][-4000:]
    report = json.loads((out_dir / "mesh-report.json").read_text())
    assert [(f["element"], f["host"], f["nic"], f["cause"]) for f in report["faults"]] == [
        ("nic", labels[2], "r1", "link-down")]
    f = report["faults"][0]
    assert f["evidence"]["nic"]["carrier"] is False and f["fix"], f
    with capsys.disabled():
        print(f"\nmesh.yml on {HOSTS} lab hosts: check {check['seconds']:.1f} s, pass {fixed['seconds']:.1f} s, "
              f"fail {broken['seconds']:.1f} s")
