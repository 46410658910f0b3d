# Copyright: (c) 2025, roce-net maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# or Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0.txt), at your option.
# SPDX-License-Identifier: GPL-3.0-or-later OR Apache-2.0
"""Unit tests of roce_net_rdma_probe and roce_net_rdma_matrix (no root).

The probe module runs with a faked roce_net: the real package's error classes
and result types, with probe_rdma / probe_rdma_server / verbs_view / Host
replaced by fakes that answer from reports the Rust engine recorded in its own
tests (roce-net/tests/fixtures/rdma/rdma_*.json, kept in the engine's shape by
roce-net/src/probe/rdma/tests/session.rs: a passed session and its server, an
ARP-flux failure through a polluted neighbour, a timeout, a refused
connection, a no-route failure). Their outputs then feed the matrix module, so
the matrix's cells, table and verdict are tested on what the probe module
really returns. One test runs the probe module against the real library on
this host (no RDMA: the no_kernel_support answer)."""

from __future__ import absolute_import, annotations, division, print_function

import copy
import json
import os
import types

import pytest

import roce_net as real

from ansible.module_utils.testing import patch_module_args

from ansible_collections.roce_net.roce.plugins.module_utils import common
from ansible_collections.roce_net.roce.plugins.modules import roce_net_rdma_matrix as matrix_mod
from ansible_collections.roce_net.roce.plugins.modules import roce_net_probe as arp_mod
from ansible_collections.roce_net.roce.plugins.modules import roce_net_rdma_probe as probe_mod

DATA = os.path.join(os.path.dirname(__file__), *([os.pardir] * 7), "roce-net", "tests", "fixtures", "rdma")
KERNEL_RDMA = os.path.exists("/sys/class/infiniband_verbs")
# The library's message for this case (roce-net/src/probe/rdma/ibverbs.rs,
# VerbsBackend::available: "<reason>: <detail>", errno kept).
NO_KERNEL = real.NoRdmaError(
    "no_kernel_support: the kernel has no RDMA user-space support: libibverbs' device list failed with "
    "ENOSYS (/sys/class/infiniband_verbs is missing); load the RDMA modules (ib_uverbs and the NIC's "
    "driver, e.g. mlx5_ib) or use a kernel built with CONFIG_INFINIBAND_USER_ACCESS",
    kind="no_rdma", errno=38)


def recorded(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


def client_report(name, **change):
    """A recorded client report as the real result type (what probe_rdma returns)."""
    d = recorded(name)
    d.update(change)
    return real.RdmaProbeResult._from(d)


class FakeHost(object):
    """roce_net.Host without a namespace: route_get answers from a table."""

    routes = {}

    def __init__(self, netns=None, sysfs_root=None, etc_root=None):
        self.netns = netns

    def route_get(self, dst, src=None):
        r = self.routes.get(str(dst))
        if r is None:
            raise real.NetlinkError("route to %s: Network is unreachable" % dst, kind="netlink", errno=101)
        return types.SimpleNamespace(dev=r[0], prefsrc=src or r[1], gateway=None, table=254, type="unicast")


class FakeRoceNet(types.ModuleType):
    """The roce_net package as the module sees it, with faked I/O."""

    def __init__(self, answers=None, server=None, unavailable=None):
        types.ModuleType.__init__(self, "roce_net")
        self.RoceNetError = real.RoceNetError
        self.NoRdmaError = real.NoRdmaError
        self.__version__ = real.__version__
        self.Host = FakeHost
        self.answers = dict((k, list(v) if isinstance(v, list) else [v]) for k, v in (answers or {}).items())
        self.server = server
        self.unavailable = unavailable
        self.calls = []

    def probe_rdma(self, host, peer, **kw):
        self.calls.append(("client", peer, kw))
        todo = self.answers[peer]
        answer = todo.pop(0) if len(todo) > 1 else todo[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def probe_rdma_server(self, host, **kw):
        self.calls.append(("server", None, kw))
        if isinstance(self.server, Exception):
            raise self.server
        return self.server

    def verbs_view(self, host, **kw):
        self.calls.append(("verbs_view", None, kw))
        return types.SimpleNamespace(unavailable=self.unavailable, devices=())


@pytest.fixture
def fake(monkeypatch):
    def install(**kw):
        rn = FakeRoceNet(**kw)
        monkeypatch.setattr(common, "roce_net", rn)
        monkeypatch.setattr(probe_mod, "RETRY_PAUSE", 0.01)
        return rn
    return install


def run(module, args, capsys, check=False):
    if check:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            module.main()
    return json.loads(capsys.readouterr().out)


# Peers of the client tests and the recorded answer each gets.
OK, FLUX, SLOW, GONE = "198.18.1.11", "198.18.2.11", "198.18.3.11", "198.18.4.11"


def three_peers():
    return {OK: client_report("rdma_probe_report.json"), FLUX: client_report("rdma_probe_arp_flux.json"),
            SLOW: client_report("rdma_probe_timeout.json")}


def test_client_returns_each_peers_result_with_cause_and_evidence(fake, capsys):
    rn = fake(answers=three_peers())
    out = run(probe_mod, dict(mode="client", peers=[OK, FLUX, SLOW], source="198.18.9.11", timeout=5,
                              size=4096, parallel=2), capsys)
    assert out["changed"] is False and "failed" not in out, out
    assert out["ok"] is False and out["rdma_available"] is True and out["no_rdma"] is None
    by = dict((r["peer"], r) for r in out["results"])
    assert [r["peer"] for r in out["results"]] == [OK, FLUX, SLOW]
    assert by[OK]["status"] == "ok" and by[OK]["cause"] is None
    assert by[OK]["message"].startswith("RDMA ok: send/recv median") and "verified" in by[OK]["message"]
    assert by[OK]["report"]["write_to_peer"]["verified"] is True
    flux = by[FLUX]
    assert flux["status"] == "failed" and flux["cause"] == "arp-flux" and flux["stage"] == "send_recv"
    assert flux["value"]["type"] == "completion" and flux["value"]["status"] == 12
    assert flux["evidence"]["mac_owner_on_peer"] == "p1"
    assert flux["fix"] and flux["message"].startswith("arp-flux at send_recv")
    slow = by[SLOW]
    assert slow["status"] == "failed" and slow["cause"] == "timeout" and slow["value"]["type"] == "timeout"
    assert out["summary"] == dict(ok=1, failed=2, no_rdma=0, error=0, would_probe=0)
    assert out["msg"] == "RDMA to 2 of 3 peer(s) did not pass: %s arp-flux; %s timeout" % (FLUX, SLOW)
    # What the library got: the options given, nothing the user left unset.
    kws = [call[2] for call in rn.calls if call[0] == "client"]
    assert len(kws) == 3
    assert kws[0] == dict(tcp_port=18520, timeout=5.0, source="198.18.9.11", size=4096)


def test_client_fail_on_failure_fails_with_the_results(fake, capsys):
    fake(answers=three_peers())
    out = run(probe_mod, dict(mode="client", peers=[OK, FLUX], fail_on_failure=True), capsys)
    assert out["failed"] is True and "arp-flux" in out["msg"], out
    assert [r["status"] for r in out["results"]] == ["ok", "failed"]
    fake(answers=three_peers())
    out = run(probe_mod, dict(mode="client", peers=[OK], fail_on_failure=True), capsys)
    assert "failed" not in out and out["ok"] is True and out["msg"] == "RDMA ok to all 1 peer(s)", out


def test_client_without_rdma_is_a_result_not_a_failure(fake, capsys):
    fake(answers={OK: NO_KERNEL, FLUX: NO_KERNEL})
    out = run(probe_mod, dict(mode="client", peers=[OK, FLUX]), capsys)
    assert "failed" not in out and out["changed"] is False, out
    assert out["rdma_available"] is False
    assert out["no_rdma"]["reason"] == "no_kernel_support" and out["no_rdma"]["errno"] == 38
    assert [(r["status"], r["cause"], r["reason"]) for r in out["results"]] == [
        ("no_rdma", "no_rdma", "no_kernel_support")] * 2
    assert out["msg"].startswith("RDMA not available on this host (no_kernel_support): no_kernel_support:")
    fake(answers={OK: NO_KERNEL})
    out = run(probe_mod, dict(mode="client", peers=[OK], fail_on_failure=True), capsys)
    assert out["failed"] is True and out["no_rdma"]["reason"] == "no_kernel_support", out


def test_connect_retry_probes_again_while_the_server_refuses(fake, capsys):
    refused = client_report("rdma_probe_unreachable.json")
    assert refused.failure.value["name"] == "ECONNREFUSED"
    rn = fake(answers={OK: [refused, refused, client_report("rdma_probe_report.json")]})
    out = run(probe_mod, dict(mode="client", peers=[OK], connect_retry=5), capsys)
    r = out["results"][0]
    assert r["status"] == "ok" and r["attempts"] == 3, r
    assert len(rn.calls) == 3
    # Without connect_retry (the default) the refusal is the answer.
    fake(answers={OK: [refused, client_report("rdma_probe_report.json")]})
    out = run(probe_mod, dict(mode="client", peers=[OK]), capsys)
    r = out["results"][0]
    assert r["status"] == "failed" and r["cause"] == "peer-unreachable" and r["attempts"] == 1, r
    # Other failures are never retried.
    rn = fake(answers={FLUX: [client_report("rdma_probe_arp_flux.json"), client_report("rdma_probe_report.json")]})
    out = run(probe_mod, dict(mode="client", peers=[FLUX], connect_retry=5), capsys)
    assert out["results"][0]["cause"] == "arp-flux" and len(rn.calls) == 1


def test_connect_retry_is_bounded(fake, capsys):
    refused = client_report("rdma_probe_unreachable.json")
    rn = fake(answers={OK: refused})
    out = run(probe_mod, dict(mode="client", peers=[OK], connect_retry=0.1), capsys)
    r = out["results"][0]
    assert r["cause"] == "peer-unreachable" and 1 < r["attempts"] <= 11, r
    assert len(rn.calls) == r["attempts"]


def test_client_library_error_fails_with_kind_and_peer(fake, capsys):
    bad = real.InvalidInputError("source 198.18.9.99 is on no RDMA port of this host", kind="invalid_input")
    fake(answers={OK: client_report("rdma_probe_report.json"), FLUX: bad})
    out = run(probe_mod, dict(mode="client", peers=[OK, FLUX], source="198.18.9.99"), capsys)
    assert out["failed"] is True and out["kind"] == "invalid_input", out
    assert out["msg"] == "probing RDMA to %s: source 198.18.9.99 is on no RDMA port of this host" % FLUX
    assert [r["status"] for r in out["results"]] == ["ok", "error"]


def test_client_check_mode_says_what_it_would_probe_and_probes_nothing(fake, capsys, monkeypatch):
    monkeypatch.setattr(FakeHost, "routes", {OK: ("r0", "198.18.9.11")})
    no = types.SimpleNamespace(reason="no_kernel_support", detail="ibv_get_device_list failed with ENOSYS")
    rn = fake(answers=three_peers(), unavailable=no)
    out = run(probe_mod, dict(mode="client", peers=[OK, FLUX]), capsys, check=True)
    assert out["changed"] is False and "failed" not in out, out
    assert [c[0] for c in rn.calls] == ["verbs_view"]
    assert out["rdma_available"] is False and out["no_rdma"]["reason"] == "no_kernel_support"
    first, second = out["would_probe"]
    assert first["status"] == "would_probe" and first["source"] == "198.18.9.11" and first["route"]["dev"] == "r0"
    assert first["message"] == "would probe RDMA to %s:18520 from 198.18.9.11 (dev r0)" % OK
    assert second["route"] is None and "unreachable" in second["route_error"]
    # The same keys as a real run's entries (nothing ran: no attempt, no report).
    assert set(["stage", "value", "evidence", "fix", "attempts", "report"]) <= set(first)
    assert first["attempts"] == 0 and first["report"] is None
    assert out["results"] == out["would_probe"]
    assert out["summary"]["would_probe"] == 2
    assert out["msg"].endswith("RDMA is not available here now (no_kernel_support)")


def test_server_reports_its_sessions(fake, capsys):
    srv = real.RdmaServerResult._from(recorded("rdma_server_report.json"))
    rn = fake(server=srv)
    out = run(probe_mod, dict(mode="server", source="198.18.1.11", clients=7, duration=30, timeout=4), capsys)
    assert out["changed"] is False and "failed" not in out, out
    assert out["ok"] is True and out["rdma_available"] is True and out["stopped"] == "clients"
    assert out["source"] == "198.18.1.11" and out["tcp_port"] == 18520 and out["listen"] == srv.listen
    assert len(out["sessions"]) == 1 and out["sessions"][0]["role"] == "server"
    assert out["summary"] == dict(ok=1, failed=0)
    assert rn.calls == [("server", None, dict(clients=7, duration=30.0, tcp_port=18520, timeout=4.0,
                                              source="198.18.1.11"))]


def test_server_without_rdma_and_its_check_mode(fake, capsys):
    fake(server=NO_KERNEL)
    out = run(probe_mod, dict(mode="server", source="198.18.1.11"), capsys)
    assert "failed" not in out and out["rdma_available"] is False and out["sessions"] == [], out
    assert out["no_rdma"]["reason"] == "no_kernel_support" and out["source"] == "198.18.1.11"
    fake(server=NO_KERNEL)
    out = run(probe_mod, dict(mode="server", source="198.18.1.11", fail_on_failure=True), capsys)
    assert out["failed"] is True, out
    rn = fake(server=NO_KERNEL)
    out = run(probe_mod, dict(mode="server", source="198.18.1.11", clients=3), capsys, check=True)
    assert [c[0] for c in rn.calls] == ["verbs_view"]
    assert out["would_serve"] == dict(source="198.18.1.11", tcp_port=18520, clients=3, duration=60.0, timeout=10.0,
                                      listen="198.18.1.11", token=False)
    assert out["rdma_available"] is True and out["changed"] is False
    assert out["msg"] == "check mode: would serve 3 RDMA probe client(s) from 198.18.1.11 on TCP port 18520 for at most 60.0 s"


def test_token_listen_and_sizes_reach_the_library_and_the_token_is_never_shown(fake, capsys, monkeypatch):
    secret = "s3cret-" * 5
    srv = real.RdmaServerResult._from(recorded("rdma_server_report.json"))
    rn = fake(server=srv)
    out = run(probe_mod, dict(mode="server", source="198.18.1.11", listen="0.0.0.0", token=secret, size=1 << 20,
                              latency_size=4096), capsys)
    assert rn.calls == [("server", None, dict(clients=1, duration=60.0, tcp_port=18520, timeout=10.0,
                                              source="198.18.1.11", listen="0.0.0.0", token=secret, size=1 << 20,
                                              latency_size=4096))]
    assert secret not in json.dumps(out), out
    assert out["rejected"] == [] and out["rejected_count"] == 0
    # The environment's token, for both modes; a token file wins over it.
    monkeypatch.setenv("ROCE_NET_PROBE_TOKEN", secret)
    rn = fake(answers=three_peers())
    out = run(probe_mod, dict(mode="client", peers=[OK], size=1 << 20), capsys)
    assert rn.calls[0][2]["token"] == secret and rn.calls[0][2]["size"] == 1 << 20
    assert secret not in json.dumps(out)
    rn = fake(answers=three_peers())
    run(probe_mod, dict(mode="client", peers=[OK], token_file="/etc/roce-net/probe.token"), capsys)
    assert rn.calls[0][2]["token_file"] == "/etc/roce-net/probe.token" and "token" not in rn.calls[0][2]


@pytest.mark.parametrize("args, text", [
    (dict(mode="server", source="198.18.1.11", peers=["198.18.2.11"]), "peers: only for mode=client"),
    (dict(mode="client", peers=["198.18.2.11"], clients=2, duration=5), "clients, duration: only for mode=server"),
    (dict(mode="client", peers=["198.18.2.11"], listen="0.0.0.0"), "listen: only for mode=server"),
    (dict(mode="server", source="198.18.1.11", listen="any"), "source/peers/listen"),
    (dict(mode="client", peers=["198.18.2.11", "198.18.2.11"]), "198.18.2.11 listed twice"),
    (dict(mode="client", peers=["gpu02"]), "source/peers"),
    (dict(mode="client", peers=[]), "peers: give at least one"),
    (dict(mode="client", peers=["198.18.2.11"], parallel=0), "parallel 0: must be at least 1"),
    (dict(mode="client", peers=["198.18.2.11"], timeout=0), "timeout 0.0: must be more than 0"),
    (dict(mode="client", peers=["198.18.2.11"], tcp_port=70000), "tcp_port 70000"),
    (dict(mode="server"), "source"),
    (dict(mode="client"), "peers"),
])
def test_bad_arguments_fail_before_anything_runs(fake, capsys, args, text):
    rn = fake(answers=three_peers())
    out = run(probe_mod, args, capsys)
    assert out["failed"] is True and text in out["msg"], out
    assert rn.calls == []


#: Each integer option the probe passes to the binding, with a value beyond the
#: binding's type (u16, u32, usize) and the mode that takes it.
BEYOND = [
    ("client", "size", 2 ** 70),
    ("client", "latency_size", 2 ** 64),
    ("client", "iterations", 2 ** 32),
    ("client", "latency_iterations", 2 ** 40),
    ("client", "port", 2 ** 32),
    ("client", "gid_index", 2 ** 33),
    ("client", "gid_index", -1),
    ("client", "tcp_port", 2 ** 70),
    ("server", "clients", 2 ** 70),
    ("server", "port", -5),
]


@pytest.mark.parametrize("mode, option, value", BEYOND)
def test_integers_beyond_the_bindings_range_fail_naming_the_option(capsys, mode, option, value):
    """With the real library: a value its parameter cannot hold failed inside the
    binding as an OverflowError naming nothing (a module traceback)."""
    args = dict(mode="client", peers=["198.18.0.2"]) if mode == "client" else dict(mode="server", source="198.18.0.1")
    args[option] = value
    out = run(probe_mod, args, capsys)
    assert out["failed"] is True, out
    assert out["msg"].startswith("%s %d: must be at " % (option, value)), out["msg"]
    assert "Traceback" not in json.dumps(out) and "OverflowError" not in json.dumps(out), out


@pytest.mark.parametrize("count", [2 ** 32, 2 ** 70, 0])
def test_the_arp_probe_count_beyond_the_bindings_range_fails_naming_it(capsys, count):
    out = run(arp_mod, dict(targets=["198.18.0.2"], count=count), capsys)
    assert out["failed"] is True and out["msg"].startswith("count %d: must be at " % count), out


@pytest.mark.skipif(KERNEL_RDMA, reason="this kernel has RDMA support; the no_kernel_support answer cannot be seen")
def test_the_real_library_on_this_host_answers_no_kernel_support(capsys):
    out = run(probe_mod, dict(mode="client", peers=["198.18.0.2"], timeout=2), capsys)
    assert "failed" not in out and out["rdma_available"] is False, out
    assert out["no_rdma"]["reason"] == "no_kernel_support" and out["no_rdma"]["errno"] == 38
    assert out["results"][0]["status"] == "no_rdma"
    out = run(probe_mod, dict(mode="server", source="198.18.0.1", duration=1), capsys)
    assert out["rdma_available"] is False and out["no_rdma"]["reason"] == "no_kernel_support", out
    out = run(probe_mod, dict(mode="server", source="198.18.0.1"), capsys, check=True)
    assert out["rdma_available"] is False and out["no_rdma"]["reason"] == "no_kernel_support", out


# --- the matrix, on what the probe module returns -------------------------------------------

SERVER = "198.18.1.11"


def probe_result(fake, capsys, answer, **extra):
    """What a client host registers: the probe module's output for one server."""
    fake(answers={SERVER: answer})
    return run(probe_mod, dict(dict(mode="client", peers=[SERVER]), **extra), capsys)


def server_result(fake, capsys, answer, check=False):
    """What the server host registers after async_status (the module's output + the job keys)."""
    fake(server=answer)
    out = run(probe_mod, dict(mode="server", source=SERVER, clients=4), capsys, check=check)
    if not check:
        out.update(ansible_job_id="j1.1", finished=1, started=1, results_file="/x/j1.1")
    return out


def matrix(clients, servers, capsys, **extra):
    return run(matrix_mod, dict(dict(clients=clients, servers=servers), **extra), capsys)


def test_matrix_of_success_arp_flux_timeout_and_a_dead_host(fake, capsys):
    srv = server_result(fake, capsys, real.RdmaServerResult._from(recorded("rdma_server_report.json")))
    clients = dict(
        h2=probe_result(fake, capsys, client_report("rdma_probe_report.json")),
        h3=probe_result(fake, capsys, client_report("rdma_probe_arp_flux.json")),
        h4=probe_result(fake, capsys, client_report("rdma_probe_timeout.json")),
        h5=dict(unreachable=True, msg="Failed to connect to the host via ssh", changed=False),
        h6={},
    )
    out = matrix(clients, dict(h1=srv), capsys)
    assert out["changed"] is False and "failed" not in out, out
    assert out["columns"] == [dict(peer=SERVER, server="h1", label="h1 " + SERVER)]
    cells = dict((c["client"], c) for c in out["cells"])
    assert [r["client"] for r in out["matrix"]] == ["h2", "h3", "h4", "h5", "h6"]
    assert cells["h2"]["status"] == "ok" and cells["h2"]["text"].startswith("ok ") and "Gb/s" in cells["h2"]["text"]
    assert (cells["h3"]["status"], cells["h3"]["cause"], cells["h3"]["text"]) == ("failed", "arp-flux", "arp-flux")
    assert cells["h3"]["fix"] and "arp-flux" in cells["h3"]["message"]
    assert (cells["h4"]["status"], cells["h4"]["cause"]) == ("failed", "timeout")
    assert (cells["h5"]["status"], cells["h5"]["cause"]) == ("error", "unreachable")
    assert (cells["h6"]["status"], cells["h6"]["cause"]) == ("error", "no_result")
    assert out["summary"] == dict(pairs=5, ok=1, failed=2, no_rdma=0, error=2, would_probe=0,
                                  causes={"arp-flux": 1, "timeout": 1})
    assert out["servers"][0]["status"] == "ok" and out["servers"][0]["sessions"] == 1
    assert out["verdict"] == "fail" and out["passed"] is False
    assert out["msg"] == ("RDMA failed on 4 of 5 pair(s): h3 -> h1 arp-flux; h4 -> h1 timeout; "
                          "h5 -> h1 unreachable; h6 -> h1 no_result")
    assert [p["client"] for p in out["problems"]] == ["h3", "h4", "h5", "h6"]
    table = out["table"]
    assert table[0].split() == ["client", "\\", "server", "h1", SERVER]
    assert table[1].startswith("h2 ") and table[2].split() == ["h3", "arp-flux"]
    assert table[3].split() == ["h4", "timeout"] and table[4].split() == ["h5", "error", "(unreachable)"]
    assert table[-1] == "server h1 %s: ok" % SERVER
    # Every row's cells line up under the header.
    col = table[0].index("h1 ")
    assert all(line[col - 2:col] == "  " and line[col] != " " for line in table[1:6]), table


def test_matrix_when_no_host_has_rdma_says_so(fake, capsys):
    srv = server_result(fake, capsys, NO_KERNEL)
    clients = dict((h, probe_result(fake, capsys, NO_KERNEL)) for h in ("h2", "h3", "h4"))
    out = matrix(clients, dict(h1=srv), capsys)
    assert "failed" not in out, out
    assert [c["status"] for c in out["cells"]] == ["no_rdma"] * 3
    assert set((c["reason"], c["side"], c["text"]) for c in out["cells"]) == {
        ("no_kernel_support", "client", "no_rdma (no_kernel_support)")}
    assert out["verdict"] == "no_rdma" and out["passed"] is False
    assert out["msg"] == ("RDMA not available on these hosts: h1 (no_kernel_support), h2 (no_kernel_support), "
                          "h3 (no_kernel_support), h4 (no_kernel_support)")
    assert out["no_rdma_hosts"][0] == dict(host="h1", role="server", reason="no_kernel_support")
    assert out["servers"][0]["status"] == "no_rdma"
    assert out["table"][-1] == "server h1 %s: no_rdma (no_kernel_support)" % SERVER


def test_matrix_blames_a_server_without_rdma_for_the_refused_connection(fake, capsys):
    srv = server_result(fake, capsys, NO_KERNEL)
    clients = dict(h2=probe_result(fake, capsys, client_report("rdma_probe_unreachable.json")))
    out = matrix(clients, dict(h1=srv), capsys)
    c = out["cells"][0]
    assert (c["status"], c["side"], c["reason"]) == ("no_rdma", "server", "no_kernel_support"), c
    assert c["text"] == "no_rdma (server no_kernel_support)"
    assert c["message"].startswith("the server h1 has no RDMA (no_kernel_support); this client's probe: peer-unreachable")
    assert out["verdict"] == "no_rdma" and out["msg"] == "RDMA not available on these hosts: h1 (no_kernel_support)"


def test_matrix_passes_when_every_pair_passed_and_mixes_are_not_a_pass(fake, capsys):
    srv = server_result(fake, capsys, real.RdmaServerResult._from(recorded("rdma_server_report.json")))
    ok = probe_result(fake, capsys, client_report("rdma_probe_report.json"))
    out = matrix(dict(h2=ok, h3=copy.deepcopy(ok)), dict(h1=srv), capsys)
    assert out["verdict"] == "pass" and out["passed"] is True and out["msg"] == "RDMA ok on all 2 pair(s)"
    assert out["problems"] == [] and out["summary"]["ok"] == 2
    # One client without RDMA: not a pass, and not a failure either.
    out = matrix(dict(h2=ok, h3=probe_result(fake, capsys, NO_KERNEL)), dict(h1=srv), capsys)
    assert out["verdict"] == "no_rdma" and out["passed"] is False
    assert out["msg"] == "RDMA not available on these hosts: h3 (no_kernel_support); 1 of 2 pair(s) passed"
    # A no-RDMA host next to a real failure: the failure decides.
    out = matrix(dict(h2=probe_result(fake, capsys, client_report("rdma_probe_arp_flux.json")),
                      h3=probe_result(fake, capsys, NO_KERNEL)), dict(h1=srv), capsys)
    assert out["verdict"] == "fail"
    assert out["msg"] == ("RDMA failed on 1 of 2 pair(s): h2 -> h1 arp-flux; "
                          "RDMA not available on: h3 (no_kernel_support)")


def test_matrix_of_check_mode_results(fake, capsys, monkeypatch):
    monkeypatch.setattr(FakeHost, "routes", {SERVER: ("r0", "198.18.2.11")})
    fake(answers={SERVER: client_report("rdma_probe_report.json")})
    cl = run(probe_mod, dict(mode="client", peers=[SERVER]), capsys, check=True)
    srv = server_result(fake, capsys, NO_KERNEL, check=True)
    out = matrix(dict(h2=cl), dict(h1=srv), capsys, _ansible_check_mode=True)
    assert out["verdict"] == "check_mode" and out["passed"] is False
    assert out["cells"][0]["text"] == "would probe" and out["servers"][0]["status"] == "would_serve"
    assert out["msg"] == "check mode: would probe 1 pair(s)"


def test_matrix_skips_hosts_without_the_role_and_flags_odd_results(fake, capsys):
    srv = server_result(fake, capsys, real.RdmaServerResult._from(recorded("rdma_server_report.json")))
    ok = probe_result(fake, capsys, client_report("rdma_probe_report.json"))
    skipped = dict(changed=False, skipped=True, skip_reason="Conditional result was False")
    out = matrix(dict(h1=skipped, h2=ok), dict(h1=srv, h2=skipped), capsys, names={SERVER: "gpu01:r0"})
    assert [r["client"] for r in out["matrix"]] == ["h2"] and len(out["servers"]) == 1
    assert out["columns"][0]["label"] == "gpu01:r0" and out["verdict"] == "pass"
    # A server job that was started but never collected, and a client's failed task.
    started = dict(ansible_job_id="j9.9", started=1, finished=0, changed=False)
    failed = dict(failed=True, msg="this roce_net (0.0.1) lacks probe_rdma; install a newer wheel")
    out = matrix(dict(h2=ok, h3=failed), dict(h1=srv, h9=started), capsys)
    assert out["servers"][1]["status"] == "error" and out["servers"][1]["reason"] == "not_finished"
    c3 = [c for c in out["cells"] if c["client"] == "h3"][0]
    assert c3["status"] == "error" and c3["cause"] == "task_failed" and "lacks probe_rdma" in c3["message"]
    assert out["verdict"] == "fail" and "server(s) h9 error (not_finished)" in out["msg"]
    out = matrix(dict(h2="not a result"), {}, capsys)
    assert out["failed"] is True and "h2" in out["msg"]


def test_matrix_without_any_result_fails_its_verdict(capsys):
    out = matrix({}, {}, capsys)
    assert out["verdict"] == "fail" and out["msg"].startswith("no RDMA probe results"), out
