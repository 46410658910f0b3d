"""examples/ansible/rdma-matrix.yml against a lab fleet: each host namespace an
Ansible host, the probe server started in the background (async, poll 0) on
the first, probe clients on the others, the matrix built on the controller.

These machines have no RDMA hardware and their kernel no RDMA support, so the
real probe ends at the library's no_rdma answer (reason no_kernel_support) on
every host: the test asserts exactly that in every cell, and that the playbook
reports it as "RDMA not available on these hosts" (its verdict task fails with
that message) - not as a module crash, and not as a pass. The matrix logic for
passed, ARP-flux and timeout cells is tested by the collection's unit tests
(tests/unit/plugins/modules/test_roce_net_rdma.py) on the engine's recorded
reports."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import roce_net
from conftest import _can_make_netns, cannot_run, lab_fleet
from test_ansible_fleet import EXAMPLES, _bin, ansible_env

HOSTS = 4
KERNEL_RDMA = os.path.exists("/sys/class/infiniband_verbs")


@pytest.fixture
def rdma_lab():
    """roce_net.Lab.fleet(4, 1): namespaces rnt-py-rdma-<pid>-<n>-{sw,h1..h4},
    host k's NIC r0 at 198.18.k.11/16; removed even on failure."""
    why = _can_make_netns()
    if why:
        cannot_run(why)
    if KERNEL_RDMA:
        cannot_run("this kernel has RDMA support: the test asserts the no_kernel_support answer")
    with lab_fleet(HOSTS, 1, "py-rdma") as lab:
        yield lab


def inventory(lab: roce_net.Lab, tmp: Path) -> Path:
    addr = {n.namespace: n.address for n in lab.nics if n.name == "r0"}
    lines = ["[fleet]"]
    for k, ns in enumerate(lab.fleet_hosts, start=1):
        lines.append(f"h{k} roce_netns={ns} rdma_address={addr[ns]}")
    lines += ["", "[fleet:vars]", "ansible_connection=local", f"ansible_python_interpreter={sys.executable}"]
    inv = tmp / "inventory.ini"
    inv.write_text("\n".join(lines) + "\n")
    return inv


def play(inv: Path, tmp: Path, tag: str, *extra: str) -> dict:
    out_dir = tmp / tag
    out_dir.mkdir()
    # Pipelining: each module is piped to the interpreter, without temp files (async tasks still use them).
    env = dict(ansible_env(tmp), ANSIBLE_FORKS=str(HOSTS), ANSIBLE_ASYNC_DIR=str(tmp / "async"), ANSIBLE_PIPELINING="1")
    t0 = time.monotonic()
    r = subprocess.run(
        [_bin("ansible-playbook"), "-i", str(inv), "-f", str(HOSTS), str(EXAMPLES / "rdma-matrix.yml"),
         "-e", f"result_dir={out_dir}", "-e", "rdma_duration=20", "-e", "rdma_timeout=5", *extra],
        cwd=EXAMPLES, env=env, capture_output=True, text=True, timeout=300,
    )
    took = time.monotonic() - t0
    recap = {
        m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
        for m in re.finditer(r"^(h\d+)\s*:\s*(ok=.*)$", r.stdout, re.M)
    }
    saved = out_dir / "rdma-matrix.json"
    assert saved.exists(), r.stdout[-4000:] + r.stderr[-2000:]
    return {"rc": r.returncode, "out": r.stdout, "err": r.stderr, "recap": recap,
            "result": json.loads(saved.read_text()), "seconds": took}


def no_crash(p: dict) -> None:
    text = p["out"] + p["err"]
    for sign in ("MODULE FAILURE", "Traceback", "exception"):
        assert sign not in text, text[-4000:]


@pytest.mark.needs_root
def test_rdma_matrix_playbook_reports_no_rdma_on_every_host(rdma_lab, tmp_path, capsys):
    lab = rdma_lab
    hosts = [f"h{k}" for k in range(1, HOSTS + 1)]
    inv = inventory(lab, tmp_path)
    addr = {n.namespace: n.address for n in lab.nics if n.name == "r0"}
    server_addr = addr[lab.fleet_hosts[0]]

    # --check: nothing is probed; the play says what would be, and passes.
    check = play(inv, tmp_path, "check", "--check")
    no_crash(check)
    assert check["rc"] == 0, check["out"][-4000:]
    m = check["result"]["matrix"]
    assert m["verdict"] == "check_mode" and m["passed"] is False
    assert [c["status"] for c in m["cells"]] == ["would_probe"] * (HOSTS - 1)
    assert m["servers"] == [dict(host="h1", peer=server_addr, status="would_serve", reason=None, sessions=0,
                                 message=m["servers"][0]["message"])]
    for k, h in enumerate(hosts[1:], start=2):
        r = check["result"]["clients"][h]
        assert r["changed"] is False and r["rdma_available"] is False, r
        assert r["no_rdma"]["reason"] == "no_kernel_support"
        (w,) = r["would_probe"]
        assert w["peer"] == server_addr and w["source"] == addr[lab.fleet_hosts[k - 1]] and w["route"]["dev"] == "r0", w
    s = check["result"]["servers"]["h1"]
    assert s["would_serve"]["clients"] == HOSTS - 1 and s["changed"] is False
    assert all(v["changed"] == 0 and v["failed"] == 0 for v in check["recap"].values()), check["recap"]

    # The real run: the library's no_rdma answer everywhere, reported as such.
    real = play(inv, tmp_path, "real")
    no_crash(real)
    assert real["rc"] == 2, real["out"][-4000:]  # ansible-playbook: a task failed
    want = "RDMA not available on these hosts: " + ", ".join(f"{h} (no_kernel_support)" for h in hosts)
    m = real["result"]["matrix"]
    assert m["verdict"] == "no_rdma" and m["passed"] is False and m["msg"] == want, m["msg"]
    assert f"no_rdma: {want}" in real["out"]
    # Only the verdict task failed (once, on the host run_once picked); the probes did not.
    fatal = [line for line in real["out"].splitlines() if line.startswith(("fatal:", "failed:"))]
    assert len(fatal) == 1 and fatal[0].startswith("fatal: [h1]: FAILED!"), fatal
    after = real["out"][real["out"].index(fatal[0]):]
    assert f'"msg": "no_rdma: {want}"' in after.split("\n}")[0], after[:3000]
    before = real["out"][: real["out"].index(fatal[0])]
    assert before[before.rindex("TASK ["):].startswith("TASK [Verdict"), before[-2000:]
    assert [real["recap"][h]["failed"] for h in hosts] == [1] + [0] * (HOSTS - 1), real["out"][-3000:]
    assert all(v["changed"] == 0 for v in real["recap"].values()), real["recap"]
    # Every cell: no_rdma from the client's own library, reason no_kernel_support.
    assert m["summary"]["pairs"] == HOSTS - 1 and m["summary"]["no_rdma"] == HOSTS - 1
    for c in m["cells"]:
        assert (c["status"], c["cause"], c["reason"], c["side"]) == (
            "no_rdma", "no_rdma", "no_kernel_support", "client"), c
        assert c["peer"] == server_addr and c["server"] == "h1"
    assert m["no_rdma_hosts"] == [dict(host=h, role="server" if h == "h1" else "client",
                                       reason="no_kernel_support") for h in hosts]
    for h in hosts[1:]:
        r = real["result"]["clients"][h]
        assert r["changed"] is False and r.get("failed", False) is False, r
        assert r["rdma_available"] is False and r["no_rdma"]["errno"] == errno.ENOSYS
        assert r["no_rdma"]["message"].startswith("no_kernel_support:")
        (x,) = r["results"]
        assert x["status"] == "no_rdma" and x["report"] is None and x["attempts"] == 1, x
    # The server ran in the background (async) and was collected with async_status.
    s = real["result"]["servers"]["h1"]
    assert s["ansible_job_id"] and s["finished"] == 1, s
    assert s["mode"] == "server" and s["rdma_available"] is False and s["sessions"] == []
    assert s["no_rdma"]["reason"] == "no_kernel_support" and s["source"] == server_addr
    assert m["servers"][0]["status"] == "no_rdma"
    with capsys.disabled():
        print("\nrdma matrix playbook: %s hosts, seconds (check, real): %s; table: %s" % (
            HOSTS, [round(x["seconds"], 1) for x in (check, real)], json.dumps(m["table"])))
