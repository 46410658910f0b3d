"""The Ansible modules against a lab namespace: check+diff changes nothing, apply
fixes, a second run reports changed=false."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import roce_net
from conftest import cannot_run, disk_tree, nic_addrs, rails_view, route_get

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK_DIR = ROOT / "examples" / "ansible"
MODULES = ROOT / "ansible_collections" / "roce_net" / "roce" / "plugins" / "modules"


def _playbook_bin() -> str:
    cand = Path(sys.executable).with_name("ansible-playbook")
    if cand.exists():
        return str(cand)
    found = shutil.which("ansible-playbook")
    if not found:
        cannot_run("ansible-playbook not installed (pip install ansible-core)")
    return found  # type: ignore[return-value]


def run_playbook(netns: str, tmp_path: Path, *extra: str) -> dict:
    """Run site.yml; returns {"changed": <recap changed count>, "result": <module result>}."""
    result_file = tmp_path / "result.json"
    if result_file.exists():
        result_file.unlink()
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(PLAYBOOK_DIR / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(ROOT),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        # the "remote" temp of local-connection hosts: not the machine's ~/.ansible/tmp
        ANSIBLE_REMOTE_TEMP=str(tmp_path / "ansible-remote-tmp"),
        ANSIBLE_HOME=str(tmp_path / "ansible-home"),
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
            "-e", f"result_file={result_file}",
            # Never the machine's own /etc or /run: table names and the journal
            # go to the test's directory.
            "-e", f"etc_root={tmp_path / 'etc'}",
            "-e", f"state_dir={tmp_path / 'run'}",
            *extra,
        ],
        cwd=PLAYBOOK_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    fatal = [line for line in r.stdout.splitlines() if line.startswith("fatal:")]
    assert r.returncode == 0, "\n".join(x[:2000] for x in fatal) + r.stdout[-2000:] + r.stderr[-2000:]
    m = re.search(r"^localhost\s*:.*?changed=(\d+)", r.stdout, re.M)
    assert m, r.stdout[-4000:]
    return {"changed": int(m.group(1)), "result": json.loads(result_file.read_text()), "out": r.stdout}


def test_facts_module_without_roce_net_reports_missing_lib(tmp_path):
    """The modules fail with missing_required_lib when roce_net cannot be imported."""
    if importlib.util.find_spec("ansible") is None:
        cannot_run("ansible-core is not installed (pip install ansible-core)")
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
             str(blocker), str(MODULES / mod), str(args)],
            capture_output=True, text=True, timeout=120, env=module_env(),
        )
        out = json.loads(r.stdout)
        assert out["failed"] is True, out
        assert "roce_net" in out["msg"] and "Failed to import" in out["msg"], out


@pytest.mark.needs_root
def test_playbook_check_diff_then_apply_then_idempotent(seed_lab, tmp_path):
    ns = seed_lab.host_ns
    host = roce_net.Host(netns=ns, etc_root=tmp_path / "etc")
    before = host.snapshot()

    # The node's own networkd configuration, which roce-net's drop-ins extend.
    netdir = tmp_path / "root/etc/systemd/network"
    netdir.mkdir(parents=True)
    for nic in seed_lab.nics:
        (netdir / f"20-{nic.name}.network").write_text(f"[Match]\nName={nic.name}\n")
    admin = sorted(p for p in (tmp_path / "root").rglob("*"))
    persist = ("-e", "persist=networkd", "-e", f"persist_root={tmp_path / 'root'}")
    out = run_playbook(ns, tmp_path, "--check", "--diff", *persist)
    res = out["result"]
    assert res["changed"] is True and res["changes"], res
    assert res["plan"]["netns"] == ns
    assert "+rule from 198.18.0.12 lookup" in out["out"]  # the diff is shown
    assert "error arp-ignore:" in out["out"]  # findings are reported
    assert res["persisted"]["dry_run"] is True and res["persisted"]["written"], res
    assert sorted((tmp_path / "root").rglob("*")) == admin  # check mode wrote nothing
    # The plan's diff, then one unified diff per persistent file to write.
    plan_diff, *file_diffs = res["diff"]
    assert "rule from 198.18.0.12 lookup" in plan_diff["after"], plan_diff
    assert "net.ipv4.conf.r1.arp_ignore 0" in plan_diff["before"], plan_diff
    assert "net.ipv4.conf.r1.arp_ignore 1" in plan_diff["after"], plan_diff
    assert len(file_diffs) == len(res["persisted"]["written"]), res
    # shown by --diff, named where it is written (under persist_root)
    assert f"+++ {tmp_path}/root/etc/sysctl.d/90-roce-net.conf" in out["out"]
    assert rails_view(host.snapshot()) == rails_view(before), "check mode changed the host"

    out = run_playbook(ns, tmp_path, *persist)
    assert out["changed"] >= 1 and out["result"]["applied"]["applied"] > 0
    assert (tmp_path / "root/etc/sysctl.d/90-roce-net.conf").is_file()
    for nic in seed_lab.nics:
        assert (netdir / f"20-{nic.name}.network.d/90-roce-net.conf").is_file(), nic
    after = host.snapshot()
    for nic in seed_lab.nics:
        assert any(r.src == f"{nic.address}/32" for r in after.rules), (nic, after.rules)
    names = (tmp_path / "etc/iproute2/rt_tables.d/roce-net.conf").read_text()
    assert "roce_r1" in names
    assert list((tmp_path / "run").glob("*.journal.json"))

    out = run_playbook(ns, tmp_path, *persist)
    assert out["changed"] == 0, out["out"][-3000:]
    assert out["result"]["persisted"]["written"] == []
    assert out["result"]["changed"] is False and out["result"]["changes"] == []


@pytest.mark.needs_root
def test_playbook_fixes_dual_stack_rails_and_the_module_rolls_them_back(dual_stack_lab, tmp_path):
    """A dual-stack lab (each NIC with an IPv4 and an IPv6 address): site.yml
    (state applied) sends every source of either family out of its own NIC
    through its table (iproute2's ``ip [-6] route get <peer> from <addr>``), a
    second run changes nothing, and ``state: rolled_back`` puts IPv4 and IPv6
    rules, routes and sysctls back exactly."""
    lab = dual_stack_lab
    host = roce_net.Host(netns=lab.host_ns, etc_root=tmp_path / "etc")
    before = rails_view(host.snapshot())
    fams = ("inet", "inet6")
    for fam in fams:
        assert route_get(lab, fam) == [(a, "r0", 254) for _, a in nic_addrs(lab.nics, fam)], fam

    out = run_playbook(lab.host_ns, tmp_path)
    assert out["changed"] >= 1 and out["result"]["applied"]["applied"] > 0, out["out"][-3000:]
    assert "error asymmetric-egress:" in out["out"]  # the doctor's finding, reported
    changes = out["result"]["changes"]
    assert any("rule" in c and "fd00:198:18::12" in c for c in changes), changes
    for fam in fams:
        assert route_get(lab, fam) == [
            (a, nic, 1001 + i) for i, (nic, a) in enumerate(nic_addrs(lab.nics, fam))
        ], fam
    after = rails_view(host.snapshot())

    out = run_playbook(lab.host_ns, tmp_path)
    assert out["changed"] == 0 and out["result"]["changes"] == [], out["out"][-3000:]
    assert rails_view(host.snapshot()) == after

    common = {"netns": lab.host_ns, "etc_root": str(tmp_path / "etc")}
    out = run_module({**common, "state_dir": str(tmp_path / "run"), "state": "rolled_back"}, tmp_path)
    assert out["changed"] is True and out["rolled_back"]["undone"], out
    assert rails_view(host.snapshot()) == before
    for fam in fams:
        assert route_get(lab, fam) == [(a, "r0", 254) for _, a in nic_addrs(lab.nics, fam)], fam


@pytest.mark.needs_root
def test_a_persist_backend_that_does_not_fit_fails_with_the_host_untouched(seed_lab, tmp_path):
    """The persistent configuration is rendered before the runtime apply: a
    backend that configures none of the NICs fails the task unchanged."""
    if importlib.util.find_spec("ansible") is None:
        cannot_run("ansible-core is not installed")
    ns = seed_lab.host_ns
    host = roce_net.Host(netns=ns, etc_root=tmp_path / "etc")
    before = rails_view(host.snapshot())
    (tmp_path / "root").mkdir()  # no networkd configuration at all
    args = {
        "netns": ns,
        "etc_root": str(tmp_path / "etc"),
        "state_dir": str(tmp_path / "run"),
        "policy": {"version": 1},
        "persist": "networkd",
        "persist_root": str(tmp_path / "root"),
    }
    out = run_module(args, tmp_path)
    assert out.get("failed") and "networkd" in out["msg"], out
    assert out["changed"] is False and "applied" not in out, out
    assert rails_view(host.snapshot()) == before, "the host was changed"
    assert not list((tmp_path / "run").glob("*.journal.json"))
    # A confirm timeout out of range: refused, unchanged.
    args = {k: v for k, v in args.items() if k not in ("persist", "persist_root")}
    out = run_module({**args, "confirm_timeout": -5}, tmp_path)
    assert out.get("failed") and "confirm_timeout" in out["msg"], out
    assert out["changed"] is False, out
    assert rails_view(host.snapshot()) == before, "the host was changed"


def module_env() -> dict:
    """The collection importable as ``ansible_collections.roce_net.roce``."""
    return dict(os.environ, PYTHONPATH=str(ROOT))


def run_module(args: dict, tmp_path: Path, check: bool = False, module: str = "roce_net") -> dict:
    """Run one of the collection's modules (default roce_net) as Ansible's
    wrapper does: as __main__, without its own directory on sys.path (where the
    module file would shadow the package); ``check`` sets check mode as Ansible
    does."""
    f = tmp_path / "args.json"
    if check:
        args = {**args, "_ansible_check_mode": True}
    f.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    mod = str(MODULES / (module + ".py"))
    r = subprocess.run(
        [sys.executable, "-c",
         "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')",
         mod, str(f)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=module_env(),
    )
    assert r.stdout, r.stderr[-3000:]
    return json.loads(r.stdout)


@pytest.mark.needs_root
def test_module_confirm_timeout_then_confirm_and_rollback(seed_lab, tmp_path):
    if importlib.util.find_spec("ansible") is None:
        cannot_run("ansible-core is not installed")
    ns = seed_lab.host_ns
    common = {
        "netns": ns,
        "etc_root": str(tmp_path / "etc"),
        "state_dir": str(tmp_path / "run"),
    }
    host = roce_net.Host(netns=ns, etc_root=tmp_path / "etc")
    out = run_module({**common, "policy": {"version": 1}, "confirm_timeout": 300}, tmp_path)
    assert out["changed"] is True and out["applied"]["confirm_deadline"], out
    assert "plan" in out and "changes" in out, out  # RETURN: applied returns both

    def check_then_real(state: str, expect: bool, journal: "str | None") -> dict:
        """Check mode says exactly what the real run then does."""
        chk = run_module({**common, "state": state}, tmp_path, check=True)
        assert chk["changed"] is expect and chk["journal_state"] == journal, chk
        if expect:
            verb = "confirm" if state == "confirmed" else "roll back"
            assert chk["msg"] == f"would {verb} the last apply", chk
        real = run_module({**common, "state": state}, tmp_path)
        assert real["changed"] is expect and real["journal_state"] == journal, real
        # RETURN: confirmed / rolled_back return journal_state and msg, no plan.
        assert "plan" not in real and "changes" not in real and real["msg"], real
        return real

    check_then_real("confirmed", True, "pending_confirm")
    out = check_then_real("confirmed", False, "committed")
    assert "nothing to confirm" in out["msg"], out
    assert any(r.protocol == 201 for r in host.snapshot().rules)
    out = check_then_real("rolled_back", True, "committed")
    assert out["rolled_back"]["undone"], out
    assert not any(r.protocol == 201 for r in host.snapshot().rules)
    out = check_then_real("rolled_back", False, "rolled_back")
    assert "rolled_back" not in out, out
    out = check_then_real("confirmed", False, "rolled_back")
    out = run_module({**common}, tmp_path)
    assert out.get("failed") and "policy" in out["msg"], out


@pytest.mark.needs_root
def test_module_persists_only_after_the_confirmation_it_waits_for(seed_lab, tmp_path):
    """Nothing is persisted for a change that is not confirmed: persist with
    confirm_timeout is refused before anything changes; persist while an apply
    awaits confirmation is refused; the state=confirmed task persists after it
    confirms (check mode: would), recorded for that apply: rolling it back
    puts the persist root back as it was, the node's own file included; after
    the rollback it persists nothing."""
    if importlib.util.find_spec("ansible") is None:
        cannot_run("ansible-core is not installed")
    ns = seed_lab.host_ns
    root = tmp_path / "root"
    # The node's own drop-in at the path persist writes: replaced, then put back.
    (root / "etc" / "sysctl.d").mkdir(parents=True)
    (root / "etc" / "sysctl.d" / "90-roce-net.conf").write_text("net.ipv4.ip_forward = 1\n")
    (root / "etc" / "sysctl.d" / "90-roce-net.conf").chmod(0o640)
    base = disk_tree(root)
    common = {"netns": ns, "etc_root": str(tmp_path / "etc"), "state_dir": str(tmp_path / "run")}
    pol = {"policy": {"version": 1}}
    persist = {"persist": "sysctl.d", "persist_root": str(root)}
    host = roce_net.Host(netns=ns, etc_root=tmp_path / "etc")
    before = rails_view(host.snapshot())

    out = run_module({**common, **pol, **persist, "confirm_timeout": 300}, tmp_path)
    assert out.get("failed") and "state=confirmed" in out["msg"], out
    assert out["changed"] is False and "applied" not in out, out
    assert rails_view(host.snapshot()) == before and disk_tree(root) == base

    out = run_module({**common, **pol, "confirm_timeout": 300}, tmp_path)
    assert out["changed"] is True and out["applied"]["confirm_deadline"], out
    # A later task persisting without confirming: refused, nothing written.
    out = run_module({**common, **pol, **persist}, tmp_path)
    assert out.get("failed") and "pending_confirm" in out["msg"], out
    assert "persisted" not in out and disk_tree(root) == base, out

    chk = run_module({**common, **pol, **persist, "state": "confirmed"}, tmp_path, check=True)
    assert chk["changed"] is True and chk["journal_state"] == "pending_confirm", chk
    assert chk["persisted"]["dry_run"] is True and chk["persisted"]["written"], chk
    assert chk["persisted_record"] is None and disk_tree(root) == base, chk
    out = run_module({**common, **pol, **persist, "state": "confirmed"}, tmp_path)
    assert out["changed"] is True and out["msg"].startswith("apply confirmed; persisted"), out
    assert host.apply_status(state_dir=tmp_path / "run")["state"] == "committed"
    assert out["persisted_record"] and Path(out["persisted_record"]).is_file(), out
    written = disk_tree(root)
    conf = Path("etc", "sysctl.d", "90-roce-net.conf")
    assert written[conf] != base[conf], written
    # Already kept: the confirming task persists again, unchanged.
    out = run_module({**common, **pol, **persist, "state": "confirmed"}, tmp_path)
    assert out["changed"] is False and out["persisted"]["written"] == [], out

    # Rolled back (as the watchdog would): what the confirming task persisted
    # for the apply is put back, so the next boot does not bring it back...
    out = run_module({**common, "state": "rolled_back"}, tmp_path)
    assert out["changed"] is True, out
    assert any("90-roce-net.conf" in f for f in out["rolled_back"]["restored_files"]), out
    assert disk_tree(root) == base, out
    # ...and the confirming task persists nothing.
    out = run_module({**common, **pol, **persist, "state": "confirmed"}, tmp_path)
    assert out.get("failed") and "rolled_back" in out["msg"], out
    assert "persisted" not in out and disk_tree(root) == base, out


@pytest.mark.needs_root
def test_probe_module_picks_nd_for_ipv6_targets_and_names_a_second_nic(seed_lab, tmp_path):
    """roce_net_probe probes an IPv6 target with neighbour solicitations (the
    family picks the probe) from the NIC's own IPv6 address: one MAC, the
    owner's; with r0 answering for r1's address too (proxy ND) the task fails
    naming both MACs; an IPv4 target beside it still gets ARP."""
    if importlib.util.find_spec("ansible") is None:
        cannot_run("ansible-core not installed (pip install ansible-core)")
    host_ns, peer_ns = seed_lab.host_ns, seed_lab.peer_ns

    def ip(ns, *args):
        subprocess.run(["ip", "-n", ns, *args], check=True, capture_output=True)

    def sysctl(key):
        subprocess.run(["ip", "netns", "exec", host_ns, "sysctl", "-qw", key], check=True)

    # ip -n HOST addr add fd00:198:18::11/64 dev r0 nodad (::12 on r1, ::100 on p0)
    for dev, addr in [("r0", "fd00:198:18::11"), ("r1", "fd00:198:18::12")]:
        ip(host_ns, "addr", "add", addr + "/64", "dev", dev, "nodad")
    ip(peer_ns, "addr", "add", "fd00:198:18::100/64", "dev", "p0", "nodad")
    macs = {i.name: i.mac for i in seed_lab.host().snapshot().interfaces}
    args = dict(netns=peer_ns, interfaces=["p0"], timeout=1.0, etc_root=str(tmp_path / "etc"))

    out = run_module(dict(args, targets=["fd00:198:18::11", "fd00:198:18::12"]), tmp_path, module="roce_net_probe")
    assert not out.get("failed") and out["changed"] is False, out
    got = {(x["target"], x["probe"], x["source"]): x["macs"] for x in out["probes"]}
    assert got == {
        ("fd00:198:18::11", "nd", "fd00:198:18::100"): [macs["r0"]],
        ("fd00:198:18::12", "nd", "fd00:198:18::100"): [macs["r1"]],
    }, out
    assert out["flux"] == [] and out["answered"] == 2

    # r0 answers for r1's address too: sysctl proxy_ndp=1 forwarding=1 on r0,
    # proxy_delay=0 (answer at once); ip -6 neigh add proxy fd00:198:18::12 dev r0
    for key in ("conf.r0.proxy_ndp=1", "conf.r0.forwarding=1", "neigh.r0.proxy_delay=0"):
        sysctl("net.ipv6." + key)
    ip(host_ns, "-6", "neigh", "add", "proxy", "fd00:198:18::12", "dev", "r0")
    out = run_module(dict(args, targets=["fd00:198:18::12", "198.18.0.12"]), tmp_path, module="roce_net_probe")
    assert out.get("failed") is True, out
    assert "several MACs answer neighbour solicitations: fd00:198:18::12 answered by" in out["msg"], out
    (nd,) = [x for x in out["flux"] if x["probe"] == "nd"]
    assert sorted(nd["macs"]) == sorted([macs["r0"], macs["r1"]]), out
    # The seed host's IPv4 is ARP flux as ever (kernel defaults): its own probe.
    (arp,) = [x for x in out["probes"] if x["probe"] == "arp"]
    assert arp["target"] == "198.18.0.12" and arp["source"] == str(seed_lab.peer_nic.address), out
    assert "ARP flux: 198.18.0.12" in out["msg"], out
