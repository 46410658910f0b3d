"""Apply from Python in a lab namespace: the seed scenario fixed, rollback,
drift, confirm timeout. Table names and journals go to the test's directory."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import roce_net
from conftest import disk_tree, nic_addrs, rails_view, route_get

pytestmark = pytest.mark.needs_root

POLICY = {"version": 1, "arp": {"arp_ignore": 1, "arp_announce": 2}, "rp_filter": "loose"}


@pytest.fixture
def env(seed_lab, tmp_path):
    host = roce_net.Host(netns=seed_lab.host_ns, etc_root=tmp_path / "etc")
    return seed_lab, host, tmp_path / "run"


def _rules(st):
    return sorted((r.priority, r.src, r.table) for r in st.rules if r.protocol == 201)


def test_seed_scenario_fixed_from_python(env):
    lab, host, run = env
    nics = lab.nics
    peer = lab.peer()
    policy = roce_net.Policy.from_dict(POLICY)
    # Before: ARP flux and NIC 2's traffic leaving by NIC 1.
    assert peer.probe_arp("p0", nics[1].address, count=2, timeout=0.5).is_flux
    assert host.route_get(lab.peer_nic.address, nics[1].address).dev == "r0"
    findings = {f.id for f in roce_net.doctor(host.snapshot())}
    assert {"arp-ignore", "source-rule-missing"} <= findings

    plan = roce_net.plan(host.snapshot(), policy)
    report = host.apply(plan, state_dir=run)
    assert isinstance(report, roce_net.ApplyReport)
    assert report.applied == len(plan.changes) and report.confirm_deadline is None

    # After: one MAC per address, each source leaves by its own NIC, nothing left to do.
    for nic in nics:
        probe = peer.probe_arp("p0", nic.address, count=2, timeout=0.5)
        assert len(probe.replies) == 1, (nic, probe)
        d = host.route_get(lab.peer_nic.address, nic.address)
        assert d.dev == nic.name and d.table != 254, (nic, d)
    after = host.snapshot()
    assert roce_net.plan(after, policy).is_empty()
    assert "arp-ignore" not in {f.id for f in roce_net.doctor(after)}

    # Undo it all from the journal.
    rb = host.rollback(state_dir=run)
    assert isinstance(rb, roce_net.RollbackReport) and len(rb.undone) == report.applied
    assert not _rules(host.snapshot())
    with pytest.raises(roce_net.NotFoundError):
        host.rollback(state_dir=run)


def test_failure_mid_apply_rolls_back(env):
    """A change the kernel refuses half way (the subnet route of a NIC that is
    down) rolls back everything before it; the error keeps the kernel's cause."""
    import errno
    import subprocess

    lab, host, run = env
    subprocess.run(["ip", "-n", lab.host_ns, "link", "set", "r1", "down"], check=True)
    before = host.snapshot()
    plan = roce_net.plan(before, roce_net.Policy.from_dict(POLICY))
    with pytest.raises(roce_net.RolledBackError) as ei:
        host.apply(plan, state_dir=run)
    e = ei.value
    assert e.kind == "rolled_back" and str(e)
    assert e.errno == errno.ENETDOWN, e
    assert e.extack and str(e).count(e.extack) == 1, e
    after = host.snapshot()
    assert _rules(after) == _rules(before) == []
    assert after.sysctls.to_dict() == before.sysctls.to_dict()


def test_drifted_host_refuses_the_plan(env):
    """Drift in what the plan touches (a sysctl it sets) refuses it; drift
    elsewhere (a rule in a table of its own) does not."""
    import subprocess

    lab, host, run = env
    plan = roce_net.plan(host.snapshot(), roce_net.Policy.from_dict(POLICY))
    subprocess.run(
        ["ip", "netns", "exec", lab.host_ns, "sysctl", "-q", "-w", "net.ipv4.conf.r0.arp_ignore=2"],
        check=True,
    )
    with pytest.raises(roce_net.DriftError) as ei:
        host.apply(plan, state_dir=run)
    assert ei.value.kind == "drift"
    assert "net.ipv4.conf.r0.arp_ignore" in str(ei.value)
    assert not _rules(host.snapshot())
    plan = roce_net.plan(host.snapshot(), roce_net.Policy.from_dict(POLICY))
    subprocess.run(
        ["ip", "-n", lab.host_ns, "rule", "add", "pref", "5000", "from", "198.18.0.99", "table", "7"],
        check=True,
    )
    host.apply(plan, state_dir=run)
    assert len(_rules(host.snapshot())) == len(lab.nics)


def test_concurrent_apply_is_locked(env):
    """Another applier holding the namespace's lock makes apply fail with LockedError."""
    import fcntl

    lab, host, run = env
    plan = roce_net.plan(host.snapshot(), roce_net.Policy.from_dict(POLICY))
    # The lock file's name is the namespace's key (its cookie); an apply and a
    # rollback make it.
    host.apply(plan, state_dir=run)
    host.rollback(state_dir=run)
    (lock,) = run.glob("*.lock")
    assert lock.name.startswith("netns-")
    with open(lock, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(roce_net.LockedError) as ei:
            host.apply(plan, state_dir=run)
        assert ei.value.kind == "locked"
    assert not _rules(host.snapshot())
    host.apply(plan, state_dir=run)  # lock released: goes through
    assert len(_rules(host.snapshot())) == len(lab.nics)


def test_confirm_and_watchdog(env):
    lab, host, run = env
    policy = roce_net.Policy.from_dict(POLICY)

    # Confirmed in time: kept.
    plan = roce_net.plan(host.snapshot(), policy)
    rep = host.apply(plan, state_dir=run, confirm_timeout=30)
    assert rep.confirm_deadline is not None
    host.confirm(state_dir=run)
    with pytest.raises(roce_net.NotFoundError):
        host.confirm(state_dir=run)
    assert len(_rules(host.snapshot())) == len(lab.nics)
    host.rollback(state_dir=run)
    assert not _rules(host.snapshot())

    # Not confirmed: the detached watchdog rolls it back after the deadline.
    plan = roce_net.plan(host.snapshot(), policy)
    host.apply(plan, state_dir=run, confirm_timeout=1)
    assert _rules(host.snapshot())
    for _ in range(600):  # a bounded wait for the watchdog, not a timing assertion
        if not _rules(host.snapshot()):
            break
        time.sleep(0.1)
    assert not _rules(host.snapshot()), "the watchdog did not roll back"


def test_rollback_puts_back_what_persist_for_apply_wrote(env, tmp_path):
    """``Host.persist_for_apply`` writes as ``roce-net persist`` does: refused
    while the apply awaits confirmation, a dry run writes and records nothing,
    and once the apply is kept what it changed is recorded, so ``rollback()``
    puts the root back byte for byte (the node's own file at persist's path
    included) along with the live state."""
    lab, host, run = env
    root = tmp_path / "root"
    conf = root / "etc" / "sysctl.d" / "90-roce-net.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("net.ipv4.ip_forward = 1\n")
    conf.chmod(0o640)
    base = disk_tree(root)
    plan = roce_net.plan(host.snapshot(), roce_net.Policy.from_dict(POLICY))
    host.apply(plan, state_dir=run, confirm_timeout=300)
    with pytest.raises(roce_net.LockedError):
        host.persist_for_apply(plan, "sysctl.d", root=root, state_dir=run)
    assert disk_tree(root) == base
    host.confirm(state_dir=run)

    dry = host.persist_for_apply(plan, "sysctl.d", root=root, state_dir=run, dry_run=True)
    assert isinstance(dry, roce_net.AppliedPersist), dry
    assert dry.report.dry_run and dry.report.written and dry.recorded is None, dry
    assert disk_tree(root) == base
    done = host.persist_for_apply(plan, "sysctl.d", root=root, state_dir=run)
    assert isinstance(done.stale, roce_net.RemoveReport), done
    assert done.recorded and Path(done.recorded).parent == run, done
    assert conf.read_bytes() != base[conf.relative_to(root)][1]

    rb = host.rollback(state_dir=run)
    assert any("sysctl.d/90-roce-net.conf" in f for f in rb.restored_files), rb
    assert disk_tree(root) == base, rb
    assert not _rules(host.snapshot())


def test_ipv6_rails_fixed_and_rolled_back_exactly(ipv6_lab, tmp_path):
    """An IPv6-only seed lab: every source address leaves by r0 and the doctor
    says so; after apply each leaves by its own NIC through its table (in
    iproute2's ``ip -6 route get <peer> from <addr>``), a second apply changes
    nothing, and rollback puts IPv6 rules, routes and sysctls back exactly."""
    lab, run = ipv6_lab, tmp_path / "run"
    host = roce_net.Host(netns=lab.host_ns, etc_root=tmp_path / "etc")
    addrs = [a for _, a in nic_addrs(lab.nics, "inet6")]
    assert len(addrs) == len(lab.nics) and all(a.startswith("fd00:198:18::") for a in addrs)
    assert route_get(lab, "inet6") == [(a, "r0", 254) for a in addrs]
    before = host.snapshot()
    findings = roce_net.doctor(before)
    egress = sorted(f.subject.address for f in findings if f.id == "asymmetric-egress")
    assert egress == addrs[1:], findings
    assert not any(f.id.startswith("arp-") for f in findings), findings

    # An IPv6 sysctl to set as well, so that rollback has one to put back.
    policy = roce_net.Policy.from_dict(
        {"version": 1, "family": "ipv6", "ipv6": {"ndisc_notify": 1}}
    )
    plan = roce_net.plan(before, policy)
    report = host.apply(plan, state_dir=run)
    assert report.applied == len(plan.changes) > 0
    after = host.snapshot()
    assert route_get(lab, "inet6") == [
        (a, f"r{i}", 1001 + i) for i, a in enumerate(addrs)
    ], "each source leaves by its own NIC, through its table"
    assert sorted((r.family, str(r.src)) for r in after.rules if r.protocol == 201) == [
        ("inet6", f"{a}/128") for a in sorted(addrs)
    ]
    assert {n.name: after.sysctls.interfaces[n.name].configured.ndisc_notify for n in lab.nics} == {
        n.name: 1 for n in lab.nics
    }
    assert "asymmetric-egress" not in {f.id for f in roce_net.doctor(after)}

    again = roce_net.plan(after, policy)
    assert again.is_empty(), again.changes
    assert host.apply(again, state_dir=run).applied == 0
    assert rails_view(host.snapshot()) == rails_view(after)

    rb = host.rollback(state_dir=run)
    assert len(rb.undone) == report.applied
    assert rails_view(host.snapshot()) == rails_view(before)
    assert route_get(lab, "inet6") == [(a, "r0", 254) for a in addrs]
