# Copyright: (c) 2026, roce-net maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# or Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0.txt), at your option.
# SPDX-License-Identifier: GPL-3.0-or-later OR Apache-2.0
"""Unit tests of roce_net_mesh that need no root and send nothing: the plan
from snapshots, a node's part in check mode, the report of missing and of
check-mode runs, argument errors. The run itself is tested against lab
namespaces (roce-net-py/tests/test_ansible_mesh.py)."""

from __future__ import absolute_import, annotations, division, print_function

import json

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.roce_net.roce.plugins.modules import roce_net_mesh
from ansible_collections.roce_net.roce.tests.unit.plugins.modules.test_roce_net_fleet import two_hosts


def run(args, capsys):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            roce_net_mesh.main()
    return json.loads(capsys.readouterr().out)


def plan(capsys, **extra):
    a, b = two_hosts()
    args = dict(step="plan", nodes=[a, b], levels=["neighbor", "ip"], start_in=0)
    args.update(extra)
    out = run(args, capsys)
    assert out.get("failed") is not True, out
    return out


def test_plan_from_snapshots_counts_nodes_rails_and_probes(capsys):
    out = plan(capsys)
    assert out["changed"] is False
    p = out["plan"]
    assert [n["host"] for n in p["inventory"]["nodes"]] == ["gpu1", "gpu2"]
    assert p["id"] == out["id"] and len(p["options"]["token"]) == 32
    s = out["summary"]
    assert s["nodes"] == 2 and s["nics"] >= 2 and s["probes"] >= s["nics"], s
    # The plan's last slot: its rounds and the grace, from a start of now.
    assert 0 < out["ends_in"] <= 60, out["ends_in"]


def test_run_in_check_mode_lists_what_it_would_probe_and_sends_nothing(capsys):
    p = plan(capsys)["plan"]
    out = run(dict(step="run", plan=p, node="gpu1", _ansible_check_mode=True), capsys)
    assert out["changed"] is False and "result" not in out, out
    assert out["would_probe"] and all(x.startswith("round ") and " -> gpu2 " in x for x in out["would_probe"]), out
    assert out["would_answer"] > 0 and "check mode" in out["msg"]


def test_report_names_nodes_without_a_result_and_of_check_mode_runs_says_so(capsys):
    p = plan(capsys)["plan"]
    out = run(dict(step="report", plan=p, results={"gpu1": {}, "gpu2": {"failed": True, "msg": "unreachable"}}), capsys)
    assert out["verdict"] == "fail" and out["passed"] is False
    assert sorted((f["element"], f["host"], f["cause"]) for f in out["faults"]) == [
        ("host", "gpu1", "no-result"), ("host", "gpu2", "no-result")]
    assert out["table"][0].startswith("fail: 2 fault(s)") and len(out["table"]) == 3, out["table"]
    checked = {"gpu1": {"would_probe": ["round 1: x"], "would_answer": 1}}
    out = run(dict(step="report", plan=p, results=checked), capsys)
    assert out["verdict"] == "check_mode" and out["passed"] is False and out["faults"] == []


@pytest.mark.parametrize(
    "args, why",
    [
        (dict(step="plan", nodes=[]), "nodes"),
        (dict(step="plan", nodes=[{"host": "x", "nics": []}], peers=0), "peers 0"),
        (dict(step="plan", nodes=[{"host": "x", "nics": []}], port=70000), "port 70000"),
        (dict(step="report", plan={"id": "x"}), "MeshPlan"),
        (dict(step="run"), "plan"),
    ],
)
def test_bad_arguments_fail_naming_the_option(capsys, args, why):
    out = run(args, capsys)
    assert out["failed"] is True and why in out["msg"], out


#: Each integer option of the plan the module passes to the binding, with a
#: value beyond the binding's type (u16, u32, u64).
BEYOND = [
    ("peers", 2 ** 70),
    ("rounds", 2 ** 32),
    ("port", 2 ** 70),
    ("rdma_ms", 2 ** 70),
    ("rdma_size", -1),
]


@pytest.mark.parametrize("option, value", BEYOND)
def test_integers_beyond_the_bindings_range_fail_naming_the_option(capsys, option, value):
    """Checked before the binding (PLAN_LIMITS): there a value its parameter
    cannot hold fails as an OverflowError naming nothing (a module traceback)."""
    out = run({"step": "plan", "nodes": [{"host": "x", "nics": []}], option: value}, capsys)
    assert out["failed"] is True, out
    assert out["msg"].startswith("%s %d: must be at " % (option, value)), out["msg"]
    assert "Traceback" not in json.dumps(out) and "OverflowError" not in json.dumps(out), out


def test_node_lists_the_nics_it_is_given_without_an_address_and_says_so(capsys, monkeypatch):
    # gpu1 (healthy.json) with ens2's cable pulled and its address gone, as
    # systemd-networkd drops a NIC's addresses when it loses its carrier, and
    # ens9 named but not there; the node step reads the host through
    # host_from_params, here a stand-in that returns that snapshot.
    import roce_net

    a = two_hosts()[0]
    for i in a["interfaces"]:
        if i["name"] == "ens2":
            i["oper_state"], i["carrier"] = "DOWN", False
    a["addresses"] = [x for x in a["addresses"] if x["ifname"] != "ens2"]
    state = roce_net.parse_snapshot(json.dumps(a))

    class Stand:
        def snapshot(self):
            return state

    monkeypatch.setattr(roce_net_mesh, "host_from_params", lambda p: Stand())
    out = run(dict(step="node", nics=["ens9"]), capsys)
    assert out.get("failed") is not True, out
    gone = [(u["name"], u["cause"]) for u in out["node"]["unprobed"]]
    assert gone == [("ens2", "link-down"), ("ens9", "absent")], out["node"]
    assert "ens2" not in [n["name"] for n in out["node"]["nics"]]
    assert "not probed, no address: ens2 (link-down), ens9 (absent)" in out["msg"], out["msg"]


def test_run_passes_libibverbs_to_the_binding_only_when_given(capsys, monkeypatch):
    # The run step's RDMA level loads what libibverbs names (mesh run
    # --libibverbs); the binding is a stand-in that records what it got.
    import roce_net

    p = plan(capsys)["plan"]
    got = []

    class Result:
        def to_dict(self):
            return {"plan": p["id"], "probes": []}

    def mesh_run(host, part, **kw):
        got.append(kw)
        return Result()

    monkeypatch.setattr(roce_net_mesh, "host_from_params", lambda params: object())
    monkeypatch.setattr(roce_net, "mesh_run", mesh_run)
    out = run(dict(step="run", plan=p, node="gpu1", libibverbs="/opt/mellanox/lib/libibverbs.so.1"), capsys)
    assert out.get("failed") is not True, out
    out = run(dict(step="run", plan=p, node="gpu1"), capsys)
    assert out.get("failed") is not True, out
    assert got == [{"node": "gpu1", "libibverbs": "/opt/mellanox/lib/libibverbs.so.1"}, {"node": "gpu1"}], got
