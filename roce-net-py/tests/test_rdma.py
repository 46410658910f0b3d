"""probe_rdma / probe_rdma_server / verbs_view on a host without RDMA (these
machines: no RDMA devices, no RDMA support in the kernel), and the result types
(generated from the library's report structs, validated by them) on reports
recorded from the Rust engine's own tests
(roce-net/tests/fixtures/rdma/, kept in the engine's shape by
`probe::rdma::tests::session`; `UPDATE_GOLDEN=1` rewrites them)."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
from pathlib import Path

import pytest

import roce_net

# Reports recorded by the Rust engine's own tests (roce-net/tests/fixtures/rdma).
DATA = Path(__file__).resolve().parents[2] / "roce-net" / "tests" / "fixtures" / "rdma"
KERNEL_RDMA = os.path.exists("/sys/class/infiniband_verbs")


def test_no_kernel_support_is_no_rdma_error():
    if KERNEL_RDMA:
        pytest.skip("this kernel has RDMA support")
    with pytest.raises(roce_net.NoRdmaError) as ei:
        roce_net.probe_rdma(roce_net.Host(), "198.18.0.2", timeout=2)
    e = ei.value
    assert isinstance(e, roce_net.RoceNetError)
    assert e.kind == "no_rdma"
    assert e.errno == errno.ENOSYS
    assert e.message.startswith("no_kernel_support:"), e.message
    with pytest.raises(roce_net.NoRdmaError):
        roce_net.probe_rdma_server(roce_net.Host(), source="198.18.0.1", duration=1)
    v = roce_net.verbs_view(roce_net.Host())
    assert isinstance(v, roce_net.VerbsView)
    assert v.library == "libibverbs.so.1"
    assert isinstance(v.unavailable, roce_net.NoRdma)
    assert v.unavailable.reason == "no_kernel_support"
    assert v.devices == ()


def test_missing_library_is_no_rdma_error():
    with pytest.raises(roce_net.NoRdmaError) as ei:
        roce_net.probe_rdma(roce_net.Host(), "198.18.0.2", libibverbs="/nonexistent/libibverbs.so.1")
    assert ei.value.message.startswith("no_library:"), ei.value.message
    v = roce_net.verbs_view(roce_net.Host(), libibverbs="/nonexistent/libibverbs.so.1")
    assert v.unavailable is not None and v.unavailable.reason == "no_library"
    assert "/nonexistent/libibverbs.so.1" in v.unavailable.detail


@pytest.mark.parametrize(
    "kw, text",
    [
        ({"mtu": 1500}, "not an RDMA MTU"),
        ({"size": 0}, "write size 0"),
        ({"timeout": 0}, "timeout 0"),
        ({"iterations": 0}, "write iterations 0"),
    ],
)
def test_bad_options_are_invalid_input(kw, text):
    with pytest.raises(roce_net.InvalidInputError) as ei:
        roce_net.probe_rdma(roce_net.Host(), "198.18.0.2", **kw)
    assert text in str(ei.value)


def test_bad_peer_is_invalid_input():
    with pytest.raises(roce_net.InvalidInputError):
        roce_net.probe_rdma(roce_net.Host(), "not-an-ip")


def test_recorded_success_report_becomes_typed_results():
    d = json.loads((DATA / "rdma_probe_report.json").read_text())
    r = roce_net.RdmaProbeResult._from(d)
    assert r.ok and r.failure is None and r.role == "client"
    assert isinstance(r.latency, roce_net.RdmaLatency)
    assert r.latency.min_us <= r.latency.median_us <= r.latency.max_us
    assert isinstance(r.write_to_peer, roce_net.RdmaBandwidth) and r.write_to_peer.verified
    assert isinstance(r.peer, roce_net.RdmaEndpoint) and r.peer.gid_index == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.ok = False  # type: ignore[misc]
    # to_dict gives back the engine's document.
    assert r.to_dict() == d
    assert json.loads(r.to_json()) == d
    # Compact by default, indented on request, as every result's to_json.
    assert "\n" not in r.to_json() and ", " not in r.to_json()
    assert r.to_json(indent=2) == json.dumps(r.to_dict(), indent=2)


def test_recorded_failure_report_keeps_cause_and_evidence():
    d = json.loads((DATA / "rdma_probe_failure.json").read_text())
    r = roce_net.RdmaProbeResult._from(d)
    assert not r.ok
    f = r.failure
    assert isinstance(f, roce_net.RdmaFailure)
    assert f.stage == "ready_to_receive"
    assert f.cause == "no-route-or-arp"
    assert f.value["type"] == "errno" and f.value["name"] == "ETIMEDOUT"
    assert any(c.startswith("ip route get") for c in f.fix)
    assert r.to_dict() == d


def test_recorded_server_report_round_trips_every_field():
    """The server report's classes are generated from the Rust structs, so none of
    its fields is left out (the hand-written class had no ``local``)."""
    d = json.loads((DATA / "rdma_server_report.json").read_text())
    r = roce_net.RdmaServerResult._from(d)
    assert "local" in d and r.local is None and d["local"] is None
    assert all(isinstance(s, roce_net.RdmaProbeResult) for s in r.sessions)
    assert r.to_dict() == d
    assert roce_net.RdmaServerResult.from_json(r.to_json()) == r


@pytest.mark.parametrize(
    "path, field",
    [((), "elapsed_ms"), ((), "role"), (("local",), "host"), (("local",), "qpn"),
     (("latency",), "p99_us"), (("write_to_peer",), "verified")],
    ids=lambda v: "/".join(v) if isinstance(v, tuple) else v,
)
def test_a_missing_required_field_is_a_parse_error(path, field):
    """A report without a field the library always writes is refused, naming the
    field, rather than read as None."""
    d = json.loads((DATA / "rdma_probe_report.json").read_text())
    inner = d
    for key in path:
        inner = inner[key]
    del inner[field]
    with pytest.raises(roce_net.ParseError, match=f"missing field `{field}`"):
        roce_net.RdmaProbeResult._from(d)
    with pytest.raises(roce_net.ParseError, match=f"missing field `{field}`"):
        roce_net.RdmaProbeResult.from_json(json.dumps(d))


def test_a_field_of_the_wrong_type_is_a_parse_error():
    d = json.loads((DATA / "rdma_probe_report.json").read_text())
    d["local"]["port"] = "one"
    with pytest.raises(roce_net.ParseError, match="not a valid RdmaProbeReport"):
        roce_net.RdmaProbeResult._from(d)


def test_a_snapshot_with_the_verbs_view_has_typed_verbs():
    p = Path(__file__).resolve().parents[2] / "roce-net/tests/fixtures/doctor/verbs-sysfs-mismatch.bad.json"
    st = roce_net.load_snapshot(p)
    assert isinstance(st.verbs, roce_net.VerbsView)
    assert st.verbs.gid_query == "table"
    dev = st.verbs.devices[0]
    assert isinstance(dev, roce_net.VerbsDevice) and isinstance(dev.ports[0], roce_net.VerbsPort)
    g = [x for x in dev.ports[0].gids if x.index == 3][0]
    assert isinstance(g, roce_net.VerbsGid) and g.gid_type == "roce_v1"
    ids = [f.id for f in roce_net.doctor(st)]
    assert ids.count("verbs-sysfs-mismatch") == 2
    # A snapshot without the view keeps verbs=None and its JSON has no "verbs".
    h = roce_net.load_snapshot(p.parent / "healthy.json")
    assert h.verbs is None and '"verbs"' not in h.to_json()
