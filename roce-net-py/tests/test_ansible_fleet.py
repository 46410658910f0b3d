"""The roce_net.roce collection against a lab fleet: 8 host namespaces with two
NICs each on one switch, each an Ansible host whose modules run inside its
namespace, the playbook run with 8 forks: check+diff, apply (then a probe round
and a clean fleet report), and again with changed=0 everywhere. Before the run,
real ARP flux makes peers learn a NIC's address with another NIC's MAC, which
the first fleet report must show."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import roce_net
from conftest import cannot_run, lab_fleet, rails_view

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "ansible"
HOSTS = 8
NICS = 2


def _bin(name: str) -> str:
    cand = Path(sys.executable).with_name(name)
    if cand.exists():
        return str(cand)
    found = shutil.which(name)
    if not found:
        cannot_run(f"{name} not installed (pip install ansible-core)")
    return found  # type: ignore[return-value]


def ansible_env(tmp: Path) -> dict:
    return dict(
        os.environ,
        ANSIBLE_CONFIG=str(EXAMPLES / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(ROOT),
        ANSIBLE_LOCAL_TEMP=str(tmp / "ansible-tmp"),
        # the "remote" temp of local-connection hosts: not the machine's ~/.ansible/tmp
        ANSIBLE_REMOTE_TEMP=str(tmp / "ansible-remote-tmp"),
        ANSIBLE_HOME=str(tmp / "ansible-home"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORKS=str(HOSTS),
    )


@pytest.fixture
def fleet_lab():
    """roce_net.Lab.fleet(8, 2): namespaces rnt-py-fleet-<pid>-<n>-{sw,h1..h8},
    host k's NICs r0, r1 at 198.18.k.11/16, .12/16; removed even on failure."""
    with lab_fleet(HOSTS, NICS, "py-fleet") as lab:
        yield lab


def inventory(lab: roce_net.Lab, tmp: Path) -> Path:
    lines = ["[fleet]"]
    for k, ns in enumerate(lab.fleet_hosts, start=1):
        lines.append(
            f"h{k} roce_netns={ns} etc_root={tmp}/etc/h{k} state_dir={tmp}/run/h{k}"
        )
    lines += ["", "[fleet:vars]", "ansible_connection=local", f"ansible_python_interpreter={sys.executable}"]
    inv = tmp / "inventory.ini"
    inv.write_text("\n".join(lines) + "\n")
    return inv


def play(inv: Path, tmp: Path, tag: str, *extra: str) -> dict:
    """Run fleet.yml; the play recap per host and the saved result."""
    out_dir = tmp / tag
    out_dir.mkdir()
    t0 = time.monotonic()
    r = subprocess.run(
        [_bin("ansible-playbook"), "-i", str(inv), "-f", str(HOSTS), str(EXAMPLES / "fleet.yml"),
         "-e", f"result_dir={out_dir}", *extra],
        cwd=EXAMPLES, env=ansible_env(tmp), capture_output=True, text=True, timeout=900,
    )
    took = time.monotonic() - t0
    fatal = [line for line in r.stdout.splitlines() if line.startswith(("fatal:", "failed:"))]
    assert r.returncode == 0, "\n".join(x[:1500] for x in fatal) + r.stdout[-1500:] + r.stderr[-1500:]
    recap = {
        m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
        for m in re.finditer(r"^(h\d+)\s*:\s*(ok=.*)$", r.stdout, re.M)
    }
    assert len(recap) == HOSTS, r.stdout[-3000:]
    result = json.loads((out_dir / "fleet-result.json").read_text())
    return {"recap": recap, "result": result, "out": r.stdout, "seconds": took}


def fleet_rails_view(lab: roce_net.Lab, tmp: Path) -> list:
    """Each host's ``rails_view`` (what an apply changes), host by host."""
    return [
        rails_view(roce_net.Host(netns=ns, etc_root=tmp / "etc" / f"h{k}").snapshot())
        for k, ns in enumerate(lab.fleet_hosts, start=1)
    ]


def ping_from(ns: str, src: str, dst: str) -> None:
    """Traffic from NIC r1's address before the fix: the kernel sends it (and
    its ARP request, sender = r1's address) out of r0, and the peer learns r1's
    address with r0's MAC. The ping's own outcome does not matter."""
    subprocess.run(["ip", "netns", "exec", ns, "ping", "-n", "-q", "-c", "1", "-W", "1", "-I", src, dst],
                   capture_output=True, timeout=30)


@pytest.mark.needs_root
def test_fleet_playbook_check_apply_clean_idempotent(fleet_lab, tmp_path, capsys):
    lab = fleet_lab
    hosts = lab.fleet_hosts
    assert len(hosts) == HOSTS
    nic = {(n.namespace, n.name): n.address for n in lab.nics}
    # ARP flux, for real: h1 -> h2, h3 -> h4, h5 -> h6 from each sender's r1.
    polluted = []
    for a, b in ((0, 1), (2, 3), (4, 5)):
        ping_from(hosts[a], nic[(hosts[a], "r1")], nic[(hosts[b], "r0")])
        polluted.append((b, nic[(hosts[a], "r1")]))
    inv = inventory(lab, tmp_path)
    before_view = fleet_rails_view(lab, tmp_path)

    check = play(inv, tmp_path, "check", "--check", "--diff")
    fb = check["result"]["before"]
    wrong = [f for f in fb["findings"] if f["id"] == "fleet-neighbor-wrong-mac"]
    labels = [h["hostname"] for h in fb["hosts"]]
    for b, addr in polluted:
        on_b = [f for f in wrong if f["subject"]["host"] == labels[b] and f["subject"]["address"] == addr]
        assert on_b, (labels[b], addr, wrong)
        assert on_b[0]["evidence"]["owner"]["interface"] == "r1"
    assert fb["host_findings"]["error"] > 0  # every host has ARP flux of its own
    assert all(v["changed"] >= 1 for v in check["recap"].values()), check["recap"]
    for h, res in check["result"]["apply"].items():
        assert res["changed"] is True and res["changes"], (h, res)
        assert "diff" in res and "lookup" in res["diff"]["after"], (h, res.get("diff"))
    assert "+rule from 198.18.1.12 lookup" in check["out"]  # the diff is shown
    assert fleet_rails_view(lab, tmp_path) == before_view, "check mode changed a host"

    apply = play(inv, tmp_path, "apply")
    assert all(v["changed"] >= 1 and v["failed"] == 0 for v in apply["recap"].values()), apply["recap"]
    for h, res in apply["result"]["apply"].items():
        assert res["applied"]["applied"] > 0, (h, res)
    probe = apply["result"]["probe"]
    expected_probes = NICS * (HOSTS - 1) * NICS
    for h, res in probe.items():
        assert res["flux"] == [] and res["answered"] == expected_probes, (h, res)
    fa = apply["result"]["after"]
    assert fa["findings"] == [], fa["findings"]
    assert fa["host_findings"]["error"] == 0 and fa["host_findings"]["warning"] == 0, fa["hosts"]
    assert apply["result"]["before"]["summary"]["error"] == len(
        [f for f in apply["result"]["before"]["findings"] if f["severity"] == "error"]
    )

    again = play(inv, tmp_path, "again")
    assert all(v["changed"] == 0 and v["failed"] == 0 for v in again["recap"].values()), again["recap"]
    assert again["result"]["after"]["findings"] == []
    for h, res in again["result"]["apply"].items():
        assert res["changed"] is False and res["changes"] == [], (h, res)

    counts = {
        "hosts": HOSTS,
        "forks": HOSTS,
        "check: changed per host": sorted({v["changed"] for v in check["recap"].values()}),
        "check: cross-host findings before": check["result"]["before"]["summary"],
        "check: fleet-neighbor-wrong-mac before": len(wrong),
        "check: host findings before": fb["host_findings"],
        "apply: changed per host": sorted({v["changed"] for v in apply["recap"].values()}),
        "apply: changes applied": sum(r["applied"]["applied"] for r in apply["result"]["apply"].values()),
        "apply: probes answered, flux": [sum(r["answered"] for r in probe.values()),
                                         sum(len(r["flux"]) for r in probe.values())],
        "apply: cross-host findings after": fa["summary"],
        "apply: host findings after": fa["host_findings"],
        "again: changed per host": sorted({v["changed"] for v in again["recap"].values()}),
        "seconds (check, apply, again)": [round(x["seconds"], 1) for x in (check, apply, again)],
    }
    with capsys.disabled():
        print("\nfleet playbook counts: " + json.dumps(counts))


def test_install_role_puts_the_wheel_in_a_venv_the_modules_use(tmp_path, capsys):
    """The install role on localhost: copy the wheel, create the venv with the
    node's Python, install without network, point the play at it; then the
    facts module runs with that interpreter."""
    wheels = sorted((ROOT / "dist").glob("roce_net-*.whl"))
    if not wheels:
        cannot_run("no wheel in dist/ (scripts/build-artifacts.sh wheel, run by scripts/test-python.sh, builds it)")
    venv = tmp_path / "venv"
    pb = tmp_path / "role.yml"
    pb.write_text(
        "- hosts: localhost\n"
        "  gather_facts: false\n"
        "  roles:\n"
        "    - role: roce_net.roce.install\n"
        f"      roce_net_install_wheel: {wheels[-1]}\n"
        f"      roce_net_install_venv: {venv}\n"
        f"      roce_net_install_tmp: {tmp_path}\n"
        f"      roce_net_install_python: {sys.base_prefix}/bin/python3\n"
        "  tasks:\n"
        "    - roce_net.roce.roce_net_facts: {snapshot: false}\n"
        "    - ansible.builtin.copy:\n"
        "        content: '{{ {\"python\": ansible_python_interpreter, \"findings\": roce_net_findings} | to_json }}'\n"
        f"        dest: {tmp_path}/out.json\n"
        "        mode: '0600'\n"
    )
    inv = tmp_path / "inventory.ini"
    # An inventory variable (not -e), so the role's set_fact can override it.
    inv.write_text(f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    r = subprocess.run(
        [_bin("ansible-playbook"), "-i", str(inv), str(pb)],
        env=ansible_env(tmp_path), capture_output=True, text=True, timeout=600,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["python"] == f"{venv}/bin/python"
    assert isinstance(out["findings"], list)
    v = subprocess.run([f"{venv}/bin/python", "-c", "import roce_net; print(roce_net.__version__)"],
                       capture_output=True, text=True, check=True)
    assert v.stdout.strip() == roce_net.__version__


def _wheel() -> Path:
    wheels = sorted((ROOT / "dist").glob("roce_net-*.whl"))
    if not wheels:
        cannot_run("no wheel in dist/ (scripts/build-artifacts.sh wheel, run by scripts/test-python.sh, builds it)")
    return wheels[-1]


def _run_role(tmp: Path, interpreter: str, **role_vars: str) -> subprocess.CompletedProcess:
    """The install role alone on localhost, its variables given, the node's
    interpreter INTERPRETER (an inventory variable, so the role can override it)."""
    pb = tmp / "role.yml"
    pb.write_text(
        "- hosts: localhost\n"
        "  gather_facts: false\n"
        "  roles:\n"
        "    - role: roce_net.roce.install\n"
        + "".join(f"      {k}: '{v}'\n" for k, v in role_vars.items())
    )
    inv = tmp / "inventory.ini"
    inv.write_text(f"localhost ansible_connection=local ansible_python_interpreter={interpreter}\n")
    return subprocess.run(
        [_bin("ansible-playbook"), "-i", str(inv), str(pb)],
        env=ansible_env(tmp), capture_output=True, text=True, timeout=600,
    )


def _recap(out: str) -> dict:
    m = re.search(r"^localhost\s*:\s*(ok=.*)$", out, re.M)
    assert m, out[-3000:]
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))}


def _sha256(p: Path) -> str:
    import hashlib

    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.needs_root
def test_install_role_needs_only_the_nodes_python_and_its_venv_module(tmp_path):
    """A node as minimal as the docs promise: its Python has no pip, setuptools,
    pkg_resources or packaging (Debian's python3 and python3-venv alone). The
    role ran ansible.builtin.pip under that Python, which stopped with "needs
    the Python library packaging"; the venv's own pip needs none of it. A
    second run changes nothing."""
    wheel = _wheel()
    base = f"{sys.base_prefix}/bin/python3"
    bare = tmp_path / "node-python"
    subprocess.run([base, "-m", "venv", "--without-pip", str(bare)], check=True)
    node_python = str(bare / "bin" / "python3")
    # From a directory of its own: `-c` puts the working directory on sys.path,
    # and the repository's packaging/ folder would import as `packaging`.
    for lib in ("pip", "setuptools", "pkg_resources", "packaging"):
        r = subprocess.run([node_python, "-c", f"import {lib}"], capture_output=True, cwd=tmp_path)
        assert r.returncode != 0, f"the node's Python has {lib}: not a minimal node"
    venv = tmp_path / "venv"
    role = dict(
        roce_net_install_wheel=str(wheel),
        roce_net_install_venv=str(venv),
        roce_net_install_tmp=str(tmp_path / "cache"),
        roce_net_install_python=base,
    )
    r = _run_role(tmp_path, node_python, **role)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    v = subprocess.run([f"{venv}/bin/python", "-c", "import roce_net; print(roce_net.__version__)"],
                       capture_output=True, text=True, check=True)
    assert v.stdout.strip() == roce_net.__version__
    again = _run_role(tmp_path, node_python, **role)
    assert again.returncode == 0, again.stdout[-4000:]
    assert _recap(again.stdout)["changed"] == 0, again.stdout[-4000:]


@pytest.mark.needs_root
def test_install_role_takes_over_a_directory_another_account_made_and_checks_the_hash(tmp_path):
    """roce_net_install_tmp made by another account (here uid 65534, mode 0777,
    with its own file where the wheel goes) could swap the wheel root installs:
    the role takes the directory over (root's, 0700), replaces the planted
    file, and installs only a wheel whose SHA-256 is the controller's (and the
    pinned one, when given); a link in the directory's place is refused."""
    wheel = _wheel()
    base = f"{sys.base_prefix}/bin/python3"
    cache = tmp_path / "cache"
    cache.mkdir()
    planted = cache / wheel.name
    planted.write_bytes(b"not the wheel")
    for p in (cache, planted):
        os.chown(p, 65534, 65534)
    os.chmod(cache, 0o777)
    venv = tmp_path / "venv"
    role = dict(roce_net_install_wheel=str(wheel), roce_net_install_venv=str(venv),
                roce_net_install_tmp=str(cache), roce_net_install_python=base)

    # A pinned hash the wheel does not have: refused before anything is copied.
    r = _run_role(tmp_path, sys.executable, roce_net_install_wheel_sha256="0" * 64, **role)
    assert r.returncode != 0 and "nothing was installed" in r.stdout, r.stdout[-4000:]
    assert not venv.exists()
    assert planted.read_bytes() == b"not the wheel"

    r = _run_role(tmp_path, sys.executable, roce_net_install_wheel_sha256=_sha256(wheel), **role)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    st = os.lstat(cache)
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (0, 0, 0o700), st
    assert _sha256(planted) == _sha256(wheel)
    assert os.lstat(planted).st_uid == 0
    assert (venv / "roce-net-wheel.sha256").read_text().strip() == _sha256(wheel)

    # A link where the directory should be (planted by someone else): refused.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "link"
    link.symlink_to(elsewhere)
    r = _run_role(tmp_path, sys.executable, **dict(role, roce_net_install_tmp=str(link)))
    assert r.returncode != 0 and "is a symbolic link" in r.stdout, r.stdout[-4000:]
    assert list(elsewhere.iterdir()) == []
