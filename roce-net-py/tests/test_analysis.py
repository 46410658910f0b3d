"""doctor, nccl_env and fleet_report over snapshots (pure, no root)."""

from __future__ import annotations

import json

import pytest

import roce_net
from _fixtures import state_doc


@pytest.fixture
def state():
    return roce_net.parse_snapshot(json.dumps(state_doc(4)))


def test_doctor_finds_the_seed_problems(state):
    findings = roce_net.doctor(state)
    assert isinstance(findings, tuple) and all(isinstance(f, roce_net.Finding) for f in findings)
    ids = {f.id for f in findings}
    assert {"arp-ignore", "arp-announce", "source-rule-missing"} <= ids
    f = next(f for f in findings if f.id == "arp-ignore" and f.subject.interface == "eth1")
    assert f.severity == "error"
    assert isinstance(f.subject, roce_net.Subject) and isinstance(f.remediation, roce_net.Remediation)
    assert any("arp_ignore=1" in c for c in f.remediation.commands)
    # Errors come first.
    order = {"error": 0, "warning": 1, "info": 2}
    assert [order[f.severity] for f in findings] == sorted(order[f.severity] for f in findings)
    # to_dict is plain JSON data: the subject omits unset fields, evidence is data.
    d = f.to_dict()
    assert d["subject"] == {"interface": "eth1"}
    assert json.loads(json.dumps(d)) == d
    assert roce_net.Finding.from_dict(d) == f


def test_doctor_on_a_python_built_state_agrees(state):
    built = roce_net.HostState.from_dict(state.to_dict())
    assert [f.to_dict() for f in roce_net.doctor(built)] == [
        f.to_dict() for f in roce_net.doctor(state)
    ]


def test_doctor_options(state):
    base = {f.id for f in roce_net.doctor(state)}
    assert "mtu-mismatch" not in base
    with_mtu = {f.id for f in roce_net.doctor(state, {"expected_mtu": 4200})}
    assert "mtu-mismatch" in with_mtu
    with pytest.raises(roce_net.InvalidInputError):
        roce_net.doctor(state, {"expected_mtu": "big"})


def test_nccl_env(state):
    advice = roce_net.nccl_env(state)
    assert isinstance(advice, roce_net.NcclAdvice)
    env = advice.env()
    assert env["NCCL_IB_GID_INDEX"] == "3"
    assert "mlx5_0:1" in env["NCCL_IB_HCA"]
    v = advice.get("NCCL_IB_GID_INDEX")
    assert isinstance(v, roce_net.NcclVar) and v.reason
    assert advice.get("NOPE") is None


def test_fleet_report(state):
    doc = state_doc(4)
    other = json.loads(json.dumps(doc))
    other["hostname"] = "gpu-node-2"
    for i in other["interfaces"][1:]:
        i["mtu"] = 4200
    for k, a in enumerate(other["addresses"]):
        a["address"] = f"198.18.0.{41 + k}"
    st2 = roce_net.HostState.from_dict(other)
    rep = roce_net.fleet_report([state, st2])
    assert isinstance(rep, roce_net.FleetReport)
    # Snapshots taken inside a named namespace are named hostname:netns.
    assert [h.hostname for h in rep.hosts] == ["gpu-node-1:rnt-py-fixture", "gpu-node-2:rnt-py-fixture"]
    h = rep.hosts[0]
    assert isinstance(h, roce_net.HostSummary) and isinstance(h.findings, roce_net.FindingCounts)
    assert h.mtus == (9000,) and h.gid_index == 3 and h.subnets == ("198.18.0.0/24",)
    assert "fleet-mtu-differs" in {f.id for f in rep.findings}
    assert json.loads(rep.to_json()) == rep.to_dict()
    assert roce_net.fleet_report([]).hosts == ()
