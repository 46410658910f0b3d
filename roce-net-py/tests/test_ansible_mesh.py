"""examples/ansible/mesh.yml against a lab fleet: three host namespaces with
two NICs each on one switch, each an Ansible host whose modules run inside its
namespace. --check lists what each node would probe and sends nothing (no
neighbour entry appears anywhere); the fleet, fixed, passes and result_dir
holds the merged report and every node's result; with one NIC's switch port
down the play fails naming exactly that NIC. And the playbook against the
Slurm script (packaging/slurm/roce-net-slurm-mesh) on one fleet of six hosts,
each also a node of a scripts/lib/slurm-lab.sh cluster: with an unfixed host,
a pulled cable and a rail of small frames both name exactly those three, the
same way; fixed, both pass."""

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
from conftest import cannot_run, lab_fleet
from test_ansible_fleet import EXAMPLES, ROOT, _bin, ansible_env

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
    # mesh_libibverbs reaches each node's run step as the module's libibverbs
    # (-vvv shows every task's arguments), and no other step.
    lib = str(tmp_path / "stand in" / "libibverbs.so.1")
    check = play(inv, tmp_path, "--check", "-vvv", "-e", f"result_dir={tmp_path / 'check'}",
                 "-e", json.dumps({"mesh_libibverbs": lib}))
    assert check["rc"] == 0, check["out"][-4000:]
    assert check["out"].count(f'"libibverbs": {json.dumps(lib)}') == HOSTS, check["out"][-4000:]
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


# --- The same fleet, the same faults: mesh.yml and the Slurm script agree ---

#: The lab mesh tests' fleet (roce-net/tests/it/lab_mesh.rs): six hosts of four
#: NICs, so that an unfixed host, a pulled cable and a rail of small frames are
#: each told apart from the others.
BOTH_HOSTS, BOTH_NICS = 6, 4
#: One plan for both ways but its start: the plan's defaults (3 rounds of 2
#: peers: every pair), the neighbour and IP levels, short bounds.
BOTH_LEVELS, BOTH_MS = ["neighbor", "ip"], 300
SLURM_LAB = ROOT / "scripts" / "lib" / "slurm-lab.sh"


def _cli() -> str:
    """The portable CLI that scripts/build-artifacts.sh puts in dist/ (the one
    the Slurm script runs on every node)."""
    found = sorted((ROOT / "dist").glob("roce-net-*-x86_64-linux-gnu"))
    if not found:
        cannot_run("no CLI in dist/ (scripts/build-artifacts.sh cli, run by scripts/test.sh, builds it)")
    return str(found[-1])


def _slurm(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([str(SLURM_LAB), *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                       timeout=300)
    assert not check or r.returncode == 0, f"slurm-lab.sh {args[0]}: {r.stdout}{r.stderr}"
    return r


def _elements(report: Dict[str, object]) -> List[tuple]:
    return sorted((f["element"], f.get("host"), f.get("nic"), f.get("rail"), f["cause"])
                  for f in report["faults"])  # type: ignore[union-attr]


@pytest.mark.needs_root
def test_mesh_playbook_and_slurm_script_name_the_same_faults_on_one_fleet(tmp_path):
    """One lab fleet, each host a Slurm node of a slurm-lab cluster (Debian's
    slurmctld, slurmd and munged) named h1..h6, and the Ansible host of the
    same name whose modules run in that node's namespaces (network, host name,
    mounts: as slurmd's tasks do), so both ways call every host by the same
    name. h2 left unfixed, h4 r1's cable pulled, rail #2's NICs at MTU 9000 on
    switch ports of 1500: mesh.yml's merged report and
    roce-net-slurm-mesh's name exactly those three elements, the same in
    element, host, NIC, rail and cause. Fixed, both pass with every pair probed."""
    cli = _cli()
    etc = tmp_path / "etc"
    etc.mkdir()
    with lab_fleet(BOTH_HOSTS, BOTH_NICS, "py-mesh2") as lab:
        ns = list(lab.fleet_hosts)
        names = [f"h{k}" for k in range(1, BOTH_HOSTS + 1)]

        def port(k: int, i: int) -> str:
            """Host k's NIC i: its switch port (Lab.fleet's order)."""
            return f"s{(k - 1) * BOTH_NICS + i}"

        def fix(k: int) -> None:
            h = roce_net.Host(netns=ns[k - 1], etc_root=etc)
            h.apply(roce_net.plan(h.snapshot(), roce_net.Policy()), state_dir=tmp_path / "run" / names[k - 1])

        for k in range(1, BOTH_HOSTS + 1):
            if k != 2:
                fix(k)
        for n in ns:
            subprocess.run(["ip", "-n", n, "link", "set", "dev", "r2", "mtu", "9000"], check=True)
        subprocess.run(["ip", "-n", lab.switch_ns, "link", "set", "dev", port(4, 1), "down"], check=True)

        # The cluster: the controller in h1's namespace, every slurmd in its
        # host's, all over the r0 addresses.
        cdir = tmp_path / "cluster"
        start = ["start", str(cdir), "--controller", f"{ns[0]}=198.18.1.11"]
        for k, (name, n) in enumerate(zip(names, ns), start=1):
            start += ["--node", f"{name}={n}=198.18.{k}.11"]
        try:
            _slurm(*start)
            # Each Ansible host's interpreter enters its slurmd's namespaces.
            lines = ["[fleet]"]
            for name in names:
                pid = (cdir / f"slurmd-{name}.pid").read_text().strip()
                wrapper = tmp_path / f"python-{name}"
                wrapper.write_text(f"#!/bin/sh\nexec nsenter -t {pid} -u -n -m {sys.executable} \"$@\"\n")
                wrapper.chmod(0o755)
                lines.append(f"{name} ansible_python_interpreter={wrapper} etc_root={etc}")
            lines += ["", "[fleet:vars]", "ansible_connection=local"]
            inv = tmp_path / "inventory.ini"
            inv.write_text("\n".join(lines) + "\n")

            def both(tag: str) -> tuple:
                out = tmp_path / f"ansible-{tag}"
                out.mkdir()
                a = subprocess.run(
                    [_bin("ansible-playbook"), "-i", str(inv), "-f", str(BOTH_HOSTS), str(EXAMPLES / "mesh.yml"),
                     "-e", "mesh_start_in=20", "-e", f"mesh_neighbor_ms={BOTH_MS}", "-e", f"mesh_ip_ms={BOTH_MS}",
                     "-e", json.dumps({"mesh_levels": BOTH_LEVELS}), "-e", f"result_dir={out}"],
                    cwd=EXAMPLES, env=ansible_env(tmp_path),
                    capture_output=True, text=True, timeout=600,
                )
                a_out = a.stdout + a.stderr
                assert (out / "mesh-report.json").is_file(), a_out[-4000:]
                a_report = json.loads((out / "mesh-report.json").read_text())
                run = tmp_path / f"slurm-{tag}"
                s = _slurm(
                    "run", str(cdir), "env", f"ROCE_NET={cli}", f"ROCE_NET_ARGS=--etc-root {etc}",
                    "salloc", f"-N{BOTH_HOSTS}", str(ROOT / "packaging" / "slurm" / "roce-net-slurm-mesh"), str(run),
                    "--start-in", "15", "--levels", ",".join(BOTH_LEVELS),
                    "--neighbor-ms", str(BOTH_MS), "--ip-ms", str(BOTH_MS), check=False)
                s_out = s.stdout + s.stderr
                assert (run / "report.json").is_file(), s_out[-4000:] + _slurm("logs", str(cdir)).stdout
                s_report = json.loads((run / "report.json").read_text())
                return a.returncode, a_out, a_report, s.returncode, s_out, s_report

            a_rc, a_out, a_report, s_rc, s_out, s_report = both("broken")
            want = [
                ("host", "h2", None, None, "arp-flux"),
                ("nic", "h4", "r1", "198.18.0.0/16#1", "link-down"),
                ("rail", None, None, "198.18.0.0/16#2", "mtu"),
            ]
            shown = f"\nansible:\n{a_out[-3000:]}\nslurm:\n{s_out[-3000:]}"
            assert _elements(a_report) == want, shown
            assert _elements(s_report) == want, shown
            assert a_rc != 0 and a_report["verdict"] == "fail", shown
            assert s_rc == 6 and s_report["verdict"] == "fail", shown
            # Every node answered both ways, every pair was probed.
            for r in (a_report, s_report):
                assert r["summary"]["results"] == BOTH_HOSTS and r["summary"]["not_run"] == 0, r["summary"]
                assert r["summary"]["probes"] == BOTH_NICS * BOTH_HOSTS * (BOTH_HOSTS - 1), r["summary"]

            # Fixed: h2 applied, the cable back, the rail's switch ports at 9000.
            fix(2)
            subprocess.run(["ip", "-n", lab.switch_ns, "link", "set", "dev", port(4, 1), "up"], check=True)
            for k in range(1, BOTH_HOSTS + 1):
                subprocess.run(["ip", "-n", lab.switch_ns, "link", "set", "dev", port(k, 2), "mtu", "9000"],
                               check=True)
            wait_up(ns[3], "r1")
            a_rc, a_out, a_report, s_rc, s_out, s_report = both("fixed")
            shown = f"\nansible:\n{a_out[-3000:]}\nslurm:\n{s_out[-3000:]}"
            assert (a_rc, a_report["verdict"], a_report["faults"]) == (0, "pass", []), shown
            assert (s_rc, s_report["verdict"], s_report["faults"]) == (0, "pass", []), shown
            for r in (a_report, s_report):
                assert r["summary"]["failed"] == 0 and r["summary"]["not_run"] == 0, r["summary"]
                assert r["summary"]["passed"] == r["summary"]["probes"] == BOTH_NICS * BOTH_HOSTS * (BOTH_HOSTS - 1)
        finally:
            _slurm("stop", str(cdir), check=False)


def wait_up(ns: str, dev: str) -> None:
    """Until `dev` in `ns` is operationally up again (bounded)."""
    for _ in range(200):
        if " UP " in subprocess.run(["ip", "-n", ns, "-br", "link", "show", "dev", dev], capture_output=True,
                                    text=True).stdout:
            return
        time.sleep(0.05)
    raise AssertionError(f"{dev} in {ns} did not come up")
