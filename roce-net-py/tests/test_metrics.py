"""roce_net.render_metrics parsed by the Prometheus Python client's own text
parser (prometheus_client.parser, from PyPI): on snapshot fixtures and on a live
lab namespace."""

from __future__ import annotations

from pathlib import Path

import pytest

import roce_net

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # pragma: no cover - scripts/test-python.sh installs it
    text_string_to_metric_families = None

from conftest import cannot_run

FIXTURES = Path(__file__).resolve().parents[2] / "roce-net" / "tests" / "fixtures" / "doctor"


def families(text: str) -> dict:
    if text_string_to_metric_families is None:
        cannot_run("prometheus_client is not installed (pip install prometheus-client)")
    out = {}
    for fam in text_string_to_metric_families(text):
        assert fam.name not in out, f"family {fam.name} twice"
        out[fam.name] = fam
    return out


def load(name: str) -> roce_net.HostState:
    return roce_net.HostState.from_json((FIXTURES / name).read_text())


def value(fam, **labels) -> float:
    hits = [s.value for s in fam.samples if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(hits) == 1, (fam.name, labels, fam.samples)
    return hits[0]


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.json")))
def test_every_fixture_parses_with_types_help_and_finding_counts(fixture):
    st = load(fixture)
    fams = families(roce_net.render_metrics(st))
    findings = roce_net.doctor(st)
    for name, fam in fams.items():
        assert name.startswith("roce_net_"), name
        assert fam.documentation, name
        assert fam.type in ("gauge", "counter"), (name, fam.type)
    # The client parser strips _total from counter family names.
    assert fams["roce_net_findings"].type == "gauge"
    for sev in ("error", "warning", "info"):
        want = sum(1 for f in findings if f.severity == sev)
        assert value(fams["roce_net_findings"], severity=sev) == want
    for f in findings:
        want = sum(1 for g in findings if g.id == f.id)
        assert value(fams["roce_net_check_findings"], check=f.id) == want
    assert value(fams["roce_net_info"], hostname=st.hostname) == 1


def test_rdma_counters_keep_their_values():
    st = load("rdma-retransmits.bad.json")
    fams = families(roce_net.render_metrics(st))
    retrans = fams["roce_net_rdma_retransmits"]
    assert retrans.type == "counter"
    n = 0
    for dev in st.rdma:
        for port in dev.ports:
            for name, v in port.hw_counters.items():
                if name in ("local_ack_timeout_err", "packet_seq_err", "out_of_sequence", "rnr_nak_retry_err"):
                    assert value(retrans, device=dev.name, port=str(port.port), counter=name) == v
                    n += 1
            assert value(fams["roce_net_rdma_port_active"], device=dev.name, port=str(port.port)) in (0, 1)
    assert n > 0


@pytest.mark.needs_root
def test_live_lab_host_metrics(seed_lab):
    st = seed_lab.host().snapshot()
    fams = families(roce_net.render_metrics(st))
    for nic in seed_lab.nics:
        assert value(fams["roce_net_nic_up"], interface=nic.name) == 1
        assert value(fams["roce_net_nic_mtu_bytes"], interface=nic.name) == 1500
        assert value(fams["roce_net_nic_dropped_packets"], interface=nic.name, direction="rx") >= 0
    # The seed host before the fix: ARP flux findings, errors counted.
    assert value(fams["roce_net_check_findings"], check="arp-ignore") >= 1
    assert value(fams["roce_net_findings"], severity="error") >= 1
    assert value(fams["roce_net_info"], netns=seed_lab.host_ns) == 1
