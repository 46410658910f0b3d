"""The Ansible modules against a lab namespace: check+diff changes nothing, apply
fixes, a second run reports changed=false."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import roce_net
from conftest import cannot_run

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK_DIR = ROOT / "examples" / "ansible"


def _playbook_bin() -> str:
    cand = Path(sys.executable).with_name("ansible-playbook")
    if cand.exists():
        return str(cand)
    found = shutil.which("ansible-playbook")
    if not found:
        cannot_run("ansible-playbook not installed (pip install ansible-core)")
    return found  # type: ignore[return-value]


def run_playbook(netns: str, *extra: str) -> dict:
    env = dict(
        os.environ,
        ANSIBLE_STDOUT_CALLBACK="json",
        ANSIBLE_CONFIG=str(PLAYBOOK_DIR / "ansible.cfg"),
        ANSIBLE_LOCAL_TEMP="/tmp/rnt-py-ansible-tmp",
        ANSIBLE_NOCOLOR="1",
    )
    r = subprocess.run(
        [
            _playbook_bin(),
            "-i", "localhost,",
            "-c", "local",
            str(PLAYBOOK_DIR / "site.yml"),
            "-e", f"netns={netns}",
            "-e", f"ansible_python_interpreter={sys.executable}",
            *extra,
        ],
        cwd=PLAYBOOK_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return json.loads(r.stdout)


def task_result(out: dict, name: str) -> dict:
    for play in out["plays"]:
        for t in play["tasks"]:
            if t["task"]["name"] == name:
                return t["hosts"]["localhost"]
    raise AssertionError(f"no task {name!r}")


def routing_view(st: roce_net.HostState):
    return (
        sorted((r.priority, r.src, r.table) for r in st.rules),
        sorted((r.table, r.dst, r.dev, r.prefsrc) for r in st.routes),
        st.sysctls.to_dict(),
    )


def test_facts_module_without_roce_net_reports_missing_lib(tmp_path):
    """The modules fail with missing_required_lib when roce_net cannot be imported."""
    pytest.importorskip("ansible")
    args = tmp_path / "args.json"
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "roce_net.py").write_text("raise ImportError('hidden for the test')\n")
    for mod, margs in (("roce_net_facts.py", {}), ("roce_net.py", {"policy": {"version": 1}})):
        args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": margs}))
        # The module file roce_net.py shadows the package name when run as a script,
        # exactly as on a node; a blocker first on sys.path hides the real package.
        r = subprocess.run(
            [sys.executable, "-c",
             "import sys, runpy; sys.path.insert(0, sys.argv[1]); sys.argv = sys.argv[2:]; "
             "runpy.run_path(sys.argv[0], run_name='__main__')",
             str(blocker), str(PLAYBOOK_DIR / "library" / mod), str(args)],
            capture_output=True, text=True, timeout=120,
        )
        out = json.loads(r.stdout)
        assert out["failed"] is True, out
        assert "roce_net" in out["msg"] and "Failed to import" in out["msg"], out


def test_playbook_check_diff_then_apply_then_idempotent(seed_lab, netlink_ready):
    missing = [n for n in ("Policy", "plan") if not hasattr(roce_net, n)]
    if not hasattr(roce_net.Host, "apply"):
        missing.append("Host.apply")
    if missing:
        pytest.skip(f"roce_net does not bind {', '.join(missing)} yet")
    ns = seed_lab.host_ns
    host = seed_lab.host()
    before = host.snapshot()

    out = run_playbook(ns, "--check", "--diff")
    res = task_result(out, "Plan and apply the policy")
    assert res["changed"] is True and res["changes"], res
    assert "rule from 198.18.0.12 lookup" in res["diff"]["after"], res["diff"]
    assert "net.ipv4.conf.r1.arp_ignore 0" in res["diff"]["before"], res["diff"]
    assert "net.ipv4.conf.r1.arp_ignore 1" in res["diff"]["after"], res["diff"]
    facts = task_result(out, "Gather roce-net facts")
    assert facts["ansible_facts"]["roce_net_snapshot"]["netns"] == ns
    assert routing_view(host.snapshot()) == routing_view(before), "check mode changed the host"

    out = run_playbook(ns)
    assert out["stats"]["localhost"]["changed"] >= 1
    after = host.snapshot()
    for nic in seed_lab.nics:
        assert any(r.src == f"{nic.address}/32" for r in after.rules), (nic, after.rules)

    out = run_playbook(ns)
    assert out["stats"]["localhost"]["changed"] == 0, out["stats"]
    assert task_result(out, "Plan and apply the policy")["changed"] is False
