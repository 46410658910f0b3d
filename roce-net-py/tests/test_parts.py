"""Policy, plan, persistence, route get, ARP and ND probes and the lab, through Python."""

from __future__ import annotations

import dataclasses
import json

import pytest

import roce_net
from _fixtures import state_doc

SEED_POLICY = {"version": 1, "arp": {"arp_ignore": 1, "arp_announce": 2}, "rp_filter": "loose"}


# ---- policy ------------------------------------------------------------------


def test_policy_constructors_agree():
    d = {"version": 1, "routing": {"table_base": 2000}, "nics": {"include": ["eth*"]}}
    a = roce_net.Policy.from_dict(d)
    b = roce_net.Policy.from_json(json.dumps(d))
    c = roce_net.Policy.from_yaml("version: 1\nrouting: {table_base: 2000}\nnics: {include: [eth*]}\n")
    assert a == b == c
    full = a.to_dict()
    assert full["routing"]["table_base"] == 2000 and full["rp_filter"] == "loose"
    assert roce_net.Policy.from_dict(full) == a
    assert roce_net.Policy.from_json(a.to_json()) == a
    assert roce_net.Policy() == roce_net.Policy.from_dict({})


def test_policy_load(tmp_path):
    p = tmp_path / "p.yml"
    p.write_text("routing:\n  table_base: 3000\n")
    assert roce_net.Policy.load(p).to_dict()["routing"]["table_base"] == 3000
    with pytest.raises(roce_net.NotFoundError):
        roce_net.Policy.load(tmp_path / "missing.yml")


@pytest.mark.parametrize(
    "doc, field",
    [
        ({"version": 2}, "version"),
        ({"routing": {"table_base": "x"}}, "routing.table_base"),
        ({"routing": {"tablez": 1}}, "routing.tablez"),
        ({"arp": {"arp_ignore": 99}}, "arp.arp_ignore"),
        ({"nics": {"include": [1]}}, "nics.include[0]"),
    ],
)
def test_bad_policy_names_the_field(doc, field):
    with pytest.raises(roce_net.PolicyError) as ei:
        roce_net.Policy.from_dict(doc)
    e = ei.value
    assert e.kind == "policy" and isinstance(e, ValueError)
    assert e.field == field, e.message
    assert e.message.startswith(field + ": ")


def test_policy_syntax_errors():
    with pytest.raises(roce_net.PolicyError) as ei:
        roce_net.Policy.from_yaml("a: [")
    assert ei.value.field is None and "YAML" in ei.value.message
    with pytest.raises(roce_net.PolicyError):
        roce_net.Policy.from_json("{")
    with pytest.raises(roce_net.PolicyError):
        roce_net.Policy.from_dict({1: 2})  # type: ignore[dict-item]


# ---- plan (pure) ---------------------------------------------------------------


def _plan_for_fixture():
    st = roce_net.parse_snapshot(json.dumps(state_doc(4)))
    return st, roce_net.plan(st, roce_net.Policy.from_dict(SEED_POLICY))


def test_plan_from_a_snapshot_is_typed_and_round_trips():
    st, plan = _plan_for_fixture()
    assert isinstance(plan, roce_net.Plan) and not plan.is_empty()
    assert plan.hostname == st.hostname
    ops = {c.op for c in plan.changes}
    assert {"set_sysctl", "add_route", "add_rule"} <= ops
    rules = [c.rule for c in plan.changes if c.op == "add_rule"]
    assert all(isinstance(r, roce_net.Rule) for r in rules)
    assert sorted(r.src for r in rules) == [f"198.18.0.{11 + i}/32" for i in range(4)]
    assert all(r.protocol == plan.desired.protocol for r in rules)
    nics = plan.desired.nics
    assert [n.ifname for n in nics] == ["eth0", "eth1", "eth2", "eth3"]
    # to_dict is the library's JSON; the Python walk agrees; from_dict rebuilds it.
    d = plan.to_dict()
    assert json.loads(json.dumps(roce_net._types._Record.to_dict(plan))) == d
    again = roce_net.Plan.from_dict(d)
    assert again == plan and again.render_diff() == plan.render_diff()


def test_plan_diff_and_describe():
    _, plan = _plan_for_fixture()
    diff = plan.render_diff()
    assert "~ sysctl net.ipv4.conf.eth1.arp_ignore 0 -> 1" in diff
    assert "+ rule from 198.18.0.12 lookup" in diff
    lines = plan.describe()
    assert isinstance(lines, tuple) and len(lines) == len(plan.changes)


def test_plan_notes_say_which_table_names_are_kept():
    _, plan = _plan_for_fixture()
    assert not any("keeps the name" in n for n in plan.notes()), plan.notes()
    doc = state_doc(4)
    # Another namespace of the host named table 1001 for its own NIC.
    doc["table_names"] = {"1001": "roce_b1"}
    plan = roce_net.plan(roce_net.parse_snapshot(json.dumps(doc)), roce_net.Policy.from_dict(SEED_POLICY))
    notes = plan.notes()
    # (An rp_filter the policy changes without a finding is noted first.)
    kept = [n for n in notes if not n.startswith("rp_filter")]
    assert isinstance(notes, tuple) and kept[0].startswith("table 1001 keeps the name roce_b1"), notes
    assert "routing.table_base" in kept[-1], notes
    assert not any(c.op == "register_table_name" and c.id == 1001 for c in plan.changes), plan.changes


def test_plan_of_a_python_built_state_equals_native():
    doc = state_doc(4)
    native = roce_net.parse_snapshot(json.dumps(doc))
    built = roce_net.HostState(**{
        f.name: getattr(native, f.name)
        for f in dataclasses.fields(native)
        if f.name != "_native"
    })
    assert built._native is None and built == native
    pol = roce_net.Policy.from_dict(SEED_POLICY)
    assert roce_net.plan(built, pol).to_dict() == roce_net.plan(native, pol).to_dict()


def test_plan_on_compliant_state_is_empty():
    st, plan = _plan_for_fixture()
    # A snapshot with the desired state applied: planning again gives nothing to do.
    d = st.to_dict()
    d["routes"] += [r.to_dict() for r in plan.desired.routes]
    d["rules"] += [r.to_dict() for r in plan.desired.rules]
    d["table_names"].update({str(k): v for k, v in plan.desired.table_names.items()})
    for c in plan.changes:
        if c.op == "set_sysctl" and "conf" in c.sysctl:
            t, key = c.sysctl["conf"]["target"], c.sysctl["conf"]["key"]
            v = int(c.after)
            if t == "all":
                d["sysctls"]["all"][key] = v
            elif t == "default":
                d["sysctls"]["default"][key] = v
            else:
                conf = d["sysctls"]["interfaces"][t["interface"]]
                conf["configured"][key] = v
                conf["effective"][key] = max(v, conf["effective"][key] or 0)
    fixed = roce_net.HostState.from_dict(d)
    again = roce_net.plan(fixed, roce_net.Policy.from_dict(SEED_POLICY))
    assert [c.op for c in again.changes if c.op in ("add_route", "add_rule")] == []


# ---- persistence ------------------------------------------------------------------


def test_render_and_write_persistence(tmp_path):
    _, plan = _plan_for_fixture()
    assert "networkd" in roce_net.persistence_backends()
    # roce-net never guesses which .network file configures a NIC: without
    # discovery or explicit names, networkd is refused, naming the NIC.
    with pytest.raises(roce_net.RoceNetError) as ei:
        roce_net.render_persistence(plan, "networkd")
    assert ei.value.kind == "invalid_input" and "networkd" in str(ei.value)
    files = roce_net.render_persistence(
        plan,
        "networkd",
        networkd_files={n.ifname: f"20-{n.ifname}.network" for n in plan.desired.nics},
    )
    assert all(isinstance(f, roce_net.RenderedFile) for f in files)
    assert any(f.path.endswith(".network.d/90-roce-net.conf") for f in files)
    paths = [f.path for f in files]
    assert "/etc/sysctl.d/90-roce-net.conf" in paths
    sysctl = next(f for f in files if f.path == "/etc/sysctl.d/90-roce-net.conf")
    assert "arp_ignore = 1" in sysctl.content or "arp_ignore=1" in sysctl.content
    dry = roce_net.write_persistence(files, tmp_path, dry_run=True)
    assert isinstance(dry, roce_net.WriteReport) and dry.dry_run
    assert len(dry.written) == len(files) and not any(tmp_path.rglob("*.conf"))
    assert {d.status for d in dry.diffs} == {"create"}
    real = roce_net.write_persistence(files, tmp_path)
    assert len(real.written) == len(files)
    assert (tmp_path / "etc/sysctl.d/90-roce-net.conf").read_text() == sysctl.content
    again = roce_net.write_persistence(files, tmp_path)
    assert again.written == () and len(again.unchanged) == len(files)


def test_unknown_backend_is_invalid_input():
    _, plan = _plan_for_fixture()
    with pytest.raises(roce_net.RoceNetError) as ei:
        roce_net.render_persistence(plan, "systemd-magic")
    assert ei.value.kind == "invalid_input"


# ---- lab, route get, ARP and ND probes (root) ----------------------------------------------


@pytest.mark.needs_root
def test_seed_lab_shows_the_problem(seed_lab):
    """Before any fix: ARP flux seen by the peer, and a NIC-2-sourced packet leaves by NIC 1."""
    assert seed_lab.host_ns.startswith("rnt-py-")
    nics = seed_lab.nics
    assert [n.name for n in nics] == ["r0", "r1", "r2", "r3"]
    probe = seed_lab.peer().probe_arp("p0", nics[1].address, count=2, timeout=0.5)
    assert isinstance(probe, roce_net.ArpProbeResult)
    assert probe.is_flux and len(probe.replies) == 4
    host = seed_lab.host()
    d = host.route_get(seed_lab.peer_nic.address, src=nics[1].address)
    assert isinstance(d, roce_net.RouteDecision)
    assert d.dev == "r0" and d.table == 254
    st = host.snapshot()
    plan = roce_net.plan(st, roce_net.Policy.from_dict(SEED_POLICY))
    assert plan.netns == seed_lab.host_ns and not plan.is_empty()


@pytest.mark.needs_root
def test_nd_probe_names_the_mac_that_answers_for_an_ipv6_address(seed_lab):
    """probe_nd, IPv6's probe_arp: one MAC, the owner's (Linux answers a
    solicitation only on the NIC that holds the address); a second NIC made to
    answer for it (proxy ND on r0, with the router flag) shows as a second MAC;
    nobody answers for an address nobody holds."""
    import subprocess

    host, peer = seed_lab.host_ns, seed_lab.peer_ns

    def ip(ns, *args):
        subprocess.run(["ip", "-n", ns, *args], check=True, capture_output=True)

    # ip -n HOST addr add fd00:198:18::11/64 dev r0 nodad (and ::12 on r1, ::100 on p0)
    for dev, addr in [("r0", "fd00:198:18::11"), ("r1", "fd00:198:18::12")]:
        ip(host, "addr", "add", addr + "/64", "dev", dev, "nodad")
    ip(peer, "addr", "add", "fd00:198:18::100/64", "dev", "p0", "nodad")
    macs = {i.name: i.mac for i in seed_lab.host().snapshot().interfaces}

    one = seed_lab.peer().probe_nd("p0", "fd00:198:18::12", count=2, timeout=1.0)
    assert isinstance(one, roce_net.NdProbeResult) and isinstance(one.replies[0], roce_net.NdReply)
    assert one.source == "fd00:198:18::100" and one.requests_sent == 2
    assert [r.mac for r in one.replies] == [macs["r1"]] and not one.is_several
    assert not one.replies[0].router

    # sysctl net.ipv6.conf.r0.{proxy_ndp,forwarding}=1; ip -6 neigh add proxy fd00:198:18::12 dev r0 router
    for key in ("proxy_ndp", "forwarding"):
        subprocess.run(
            ["ip", "netns", "exec", host, "sysctl", "-qw", f"net.ipv6.conf.r0.{key}=1"], check=True
        )
    ip(host, "-6", "neigh", "add", "proxy", "fd00:198:18::12", "dev", "r0", "router")
    two = seed_lab.peer().probe_nd("p0", "fd00:198:18::12", count=2, timeout=1.0)
    assert two.is_several
    assert {r.mac: r.router for r in two.replies} == {macs["r0"]: True, macs["r1"]: False}

    none = seed_lab.peer().probe_nd(
        "p0", "fd00:198:18::77", count=1, timeout=0.5, source="fd00:198:18::101"
    )
    assert none.replies == () and none.source == "fd00:198:18::101"


def test_nd_probe_refuses_ipv4_and_arp_probe_ipv6_naming_the_other():
    """Each probe takes its own family; the message names the probe that takes
    the other (no root: refused before any socket)."""
    with pytest.raises(roce_net.InvalidInputError, match="probe_arp probes IPv4"):
        roce_net.Host().probe_nd("lo", "198.18.0.1")
    with pytest.raises(roce_net.InvalidInputError, match="probe_nd probes IPv6"):
        roce_net.Host().probe_arp("lo", "fd00:198:18::1")
    with pytest.raises(roce_net.InvalidInputError, match="ND probe timeout 0"):
        roce_net.Host().probe_nd("lo", "fd00:198:18::1", timeout=0)


def test_lab_sizes_out_of_range_are_invalid_input_before_any_namespace():
    """0, too many and negative counts all raise InvalidInputError naming the
    argument (a negative one was PyO3's OverflowError), as does an address
    family that is not a policy's word; nothing is created, so this needs no
    root."""
    cases = [
        (lambda: roce_net.Lab.seed(-1), "nics must be a positive number, not -1"),
        (lambda: roce_net.Lab.seed(0), "1 to 64 NICs, not 0"),
        (lambda: roce_net.Lab.seed(65), "not 65"),
        (lambda: roce_net.Lab.seed(2, family="inet6"), 'lab family "inet6": give ipv4, ipv6 or both'),
        (lambda: roce_net.Lab.fleet(-2, 1), "hosts must be a positive number, not -2"),
        (lambda: roce_net.Lab.fleet(2, -3), "nics must be a positive number, not -3"),
    ]
    for make, msg in cases:
        with pytest.raises(roce_net.InvalidInputError, match=msg) as e:
            make()
        assert isinstance(e.value, ValueError) and e.value.kind == "invalid_input"


@pytest.mark.needs_root
def test_lab_closes_and_removes_namespaces():
    import subprocess

    with roce_net.Lab.seed(2, tag="py") as lab:
        names = lab.namespaces
        assert len(names) == 3 and not lab.closed
    assert lab.closed
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(n in listed for n in names)
    with pytest.raises(roce_net.InvalidInputError):
        lab.host()
    lab.close()  # idempotent


def test_route_get_bad_address():
    with pytest.raises(roce_net.InvalidInputError):
        roce_net.Host().route_get("not-an-ip")
    with pytest.raises(roce_net.InvalidInputError):
        roce_net.Host().probe_arp("lo", "::1")


@pytest.mark.needs_root
def test_offline_route_lookup_matches_the_kernel(seed_lab):
    """route_lookup on a snapshot predicts what route_get asks the kernel, before
    and after the fix."""
    host = seed_lab.host()
    peer = seed_lab.peer_nic.address
    st = host.snapshot()
    for nic in seed_lab.nics:
        off = roce_net.route_lookup(st, peer, nic.address)
        live = host.route_get(peer, nic.address)
        assert isinstance(off, roce_net.FibDecision)
        assert (off.dev, off.table, off.kind) == (live.dev, live.table, live.type), nic
    assert roce_net.route_lookup(st, peer).route.dst == "198.18.0.0/24"
    with pytest.raises(roce_net.NotFoundError) as ei:
        roce_net.route_lookup(st, "203.0.113.1")
    assert "203.0.113.1" in ei.value.message
    with pytest.raises(roce_net.InvalidInputError):
        roce_net.route_lookup(st, "nope")


@pytest.mark.parametrize(
    "call, expected, got",
    [
        (lambda: roce_net.doctor(None), "HostState", "NoneType"),
        (lambda: roce_net.doctor({"hostname": "x"}), "HostState", "dict"),
        (lambda: roce_net.fleet_report([1]), "HostState", "int"),
        (lambda: roce_net.render_persistence({"changes": []}, "networkd"), "Plan", "dict"),
        (lambda: roce_net.write_persistence([1], "/nonexistent", dry_run=True), "RenderedFile", "int"),
    ],
)
def test_a_value_of_the_wrong_type_is_a_type_error_naming_both(call, expected, got):
    with pytest.raises(TypeError) as e:
        call()
    assert str(e.value) == f"expected a roce_net.{expected}, got {got}"


@pytest.mark.parametrize(
    "call",
    [
        lambda st: roce_net.doctor(st, {"expected_mtus": 9000}),
        lambda st: roce_net.fleet_report([st], {"expected_mtus": 9000}),
    ],
)
def test_a_misspelt_doctor_option_is_refused(call):
    st, _ = _plan_for_fixture()
    with pytest.raises(roce_net.InvalidInputError) as e:
        call(st)
    assert "expected_mtus" in str(e.value) and "expected_mtu" in str(e.value), e.value
