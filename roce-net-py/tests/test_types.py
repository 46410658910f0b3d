"""Result objects: typed, frozen, to_dict/to_json round trips through the library."""

from __future__ import annotations

import dataclasses
import json

import pytest

import roce_net
from _fixtures import state_doc


def _roundtrip_json(doc: dict) -> dict:
    return json.loads(json.dumps(doc))


def test_snapshot_file_loads_into_typed_objects(tmp_path):
    p = tmp_path / "snap.json"
    p.write_text(json.dumps(state_doc(4)))
    st = roce_net.load_snapshot(p)
    assert isinstance(st, roce_net.HostState)
    assert st.hostname == "gpu-node-1"
    assert isinstance(st.interfaces, tuple)
    eth1 = st.interface("eth1")
    assert isinstance(eth1, roce_net.Interface)
    assert eth1.mac == "02:aa:00:00:00:01" and eth1.mtu == 9000 and eth1.oper_state == "UP"
    assert isinstance(eth1.stats, roce_net.LinkStats) and eth1.stats.rx_packets == 1
    assert [a.address for a in st.addresses_of("eth2")] == ["198.18.0.13"]
    r = st.routes[0]
    assert isinstance(r, roce_net.Route) and r.type == "unicast" and r.table == 254
    mp = [r for r in st.routes if r.multipath][0]
    assert all(isinstance(h, roce_net.NextHop) for h in mp.multipath)
    assert [h.weight for h in mp.multipath] == [1, 2]
    goto = [r for r in st.rules if r.action == "goto"][0]
    assert isinstance(goto, roce_net.Rule) and goto.goto == 32766
    assert isinstance(st.sysctls, roce_net.SysctlView)
    assert isinstance(st.sysctls.interfaces["eth0"], roce_net.InterfaceConf)
    assert st.sysctls.effective("eth0", "rp_filter") == 1
    assert st.sysctls.tuning.udp_mem == (1, 2, 3)
    assert st.table_names == {1000: "rn_eth0", 254: "main"}
    dev = st.rdma[0]
    assert isinstance(dev, roce_net.RdmaDevice) and isinstance(dev.ports[0], roce_net.RdmaPort)
    gid = dev.ports[0].gids[0]
    assert isinstance(gid, roce_net.GidEntry)
    assert (gid.index, gid.gid_type, gid.ipv4) == (3, "roce_v2", "198.18.0.11")
    assert dev.ports[0].gids[1].gid_type == {"other": "weird"}
    assert isinstance(st.warnings[0], roce_net.SnapshotWarning)
    assert isinstance(st.neighbors[0], roce_net.Neighbor)
    assert st.neighbors[0].state == ("REACHABLE",)


def test_to_dict_is_exactly_the_library_json():
    doc = state_doc(3, extra_routes=50)
    st = roce_net.parse_snapshot(json.dumps(doc))
    # The native path (library JSON) and the Python walk over the objects agree,
    # and both equal the input: no field is lost or renamed between Rust and Python.
    assert st.to_dict() == _roundtrip_json(doc)
    walked = roce_net._types._Record.to_dict(st)
    assert _roundtrip_json(walked) == _roundtrip_json(doc)
    assert json.loads(st.to_json()) == st.to_dict()


def test_to_json_is_compact_unless_indented(tmp_path):
    st = roce_net.parse_snapshot(json.dumps(state_doc(3, extra_routes=5)))
    compact = st.to_json()
    # Compact: one line, no spaces between tokens (what `roce-net snapshot` writes).
    assert "\n" not in compact
    assert compact == json.dumps(json.loads(compact), separators=(",", ":"))
    # save_snapshot writes what `roce-net snapshot -o` writes: compact, and
    # indent=2 (the library's indented JSON) with pretty=True.
    p = tmp_path / "snap.json"
    roce_net.save_snapshot(st, p)
    assert p.read_text() == compact + "\n"
    roce_net.save_snapshot(st, p, pretty=True)
    assert p.read_text() == st.to_json(indent=2) + "\n"
    # Any other width, as json.dumps indents.
    for n in (0, 4):
        assert st.to_json(indent=n) == json.dumps(st.to_dict(), indent=n)
    # A HostState without its native original: compact too, the same data (keys
    # of defaulted fields come last there, as a dataclass declares them).
    plain = dataclasses.replace(st, _native=None)
    assert plain._native is None
    text = plain.to_json()
    assert "\n" not in text and text == json.dumps(json.loads(text), separators=(",", ":"))
    assert json.loads(text) == json.loads(compact)
    assert json.loads(plain.to_json(indent=2)) == json.loads(st.to_json(indent=2))
    assert plain.to_json(indent=2) == json.dumps(plain.to_dict(), indent=2)
    # Every other result object is compact by default too.
    r = st.routes[0]
    assert r.to_json() == json.dumps(r.to_dict(), separators=(",", ":"))
    assert r.to_json(indent=2) == json.dumps(r.to_dict(), indent=2)
    with pytest.raises(roce_net.InvalidInputError):
        st.to_json(indent=65)
    # A Policy too (the native class): compact, or indented by the library.
    pol = roce_net.Policy()
    assert "\n" not in pol.to_json() and json.loads(pol.to_json()) == pol.to_dict()
    pretty = pol.to_json(indent=2)
    assert pretty.startswith('{\n  "') and json.loads(pretty) == pol.to_dict()
    assert roce_net.Policy.from_json(pretty) == pol
    with pytest.raises(roce_net.InvalidInputError):
        pol.to_json(indent=65)


def test_from_dict_round_trip_without_native_original():
    doc = state_doc(2)
    st = roce_net.HostState.from_dict(doc)
    again = roce_net.HostState.from_dict(roce_net._types._Record.to_dict(st))
    assert again == st
    r = st.routes[0]
    assert roce_net.Route.from_dict(r.to_dict()) == r
    assert roce_net.Route.from_json(r.to_json()) == r
    for cls, obj in [
        (roce_net.Interface, st.interfaces[1]),
        (roce_net.Address, st.addresses[0]),
        (roce_net.Neighbor, st.neighbors[0]),
        (roce_net.Rule, st.rules[1]),
        (roce_net.SysctlView, st.sysctls),
        (roce_net.RdmaDevice, st.rdma[0]),
        (roce_net.GidEntry, st.rdma[0].ports[0].gids[0]),
    ]:
        assert cls.from_dict(obj.to_dict()) == obj, cls


def test_objects_are_frozen():
    st = roce_net.parse_snapshot(json.dumps(state_doc(1)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.hostname = "x"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.routes[0].table = 7  # type: ignore[misc]
    with pytest.raises(TypeError):
        st.routes[0] = st.routes[1]  # type: ignore[index]
    # FrozenInstanceError (an AttributeError); CPython 3.11's slots+frozen dataclasses
    # raise TypeError for names that are not fields.
    with pytest.raises((AttributeError, TypeError)):
        st.routes[0].extra = 1  # type: ignore[attr-defined]
    assert hash(st.routes[0]) == hash(roce_net.Route.from_dict(st.routes[0].to_dict()))


def test_from_dict_validates_through_the_library():
    bad = state_doc(1)["routes"][0] | {"dst": "not-a-prefix"}
    with pytest.raises(roce_net.ParseError) as ei:
        roce_net.Route.from_dict(bad)
    assert ei.value.kind == "parse" and "Route" in str(ei.value)


def test_change_and_plan_types_round_trip():
    st = roce_net.parse_snapshot(json.dumps(state_doc(2)))
    route = st.routes[0].to_dict()
    plan_doc = {
        "hostname": "gpu-node-1",
        "netns": None,
        "base_fingerprint": "abc",
        "changes": [
            {
                "op": "set_sysctl",
                "sysctl": {"conf": {"target": {"interface": "eth0.100"}, "key": "arp_ignore"}},
                "before": "0",
                "after": "1",
            },
            {"op": "add_route", "route": route},
            {"op": "flush_neighbors", "ifname": "eth1", "entries": [st.neighbors[1].to_dict()]},
            {"op": "register_table_name", "id": 1000, "name": "rn_eth0", "before": None},
        ],
        "desired": {
            "nics": [
                {
                    "ifname": "eth0",
                    "addresses": ["198.18.0.11/24", "fd00:198:18::11/64"],
                    "table": 1000,
                    "table_name": "rn_eth0",
                    "rule_priority": 1000,
                }
            ],
            "routes": [route],
            "rules": [],
            "sysctls": [[{"tuning": "rmem_max"}, "4194304"]],
            "table_names": {"1000": "rn_eth0"},
            "protocol": 201,
        },
        "policy": roce_net.Policy().to_dict(),
    }
    plan = roce_net.Plan.from_dict(plan_doc)
    assert isinstance(plan, roce_net.Plan) and not plan.is_empty()
    ops = [c.op for c in plan.changes]
    assert ops == ["set_sysctl", "add_route", "flush_neighbors", "register_table_name"]
    assert isinstance(plan.changes[1].route, roce_net.Route)
    assert plan.changes[0].route is None
    assert isinstance(plan.changes[2].entries[0], roce_net.Neighbor)
    assert isinstance(plan.desired.nics[0], roce_net.NicDesired)
    assert plan.to_dict() == plan_doc
    assert [c.to_dict() for c in plan.changes] == plan_doc["changes"]
    assert roce_net._types._Record.to_dict(plan) == plan_doc


def test_save_and_load_snapshot(tmp_path):
    st = roce_net.HostState.from_dict(state_doc(2))
    p = tmp_path / "out.json"
    roce_net.save_snapshot(st, p)
    assert roce_net.load_snapshot(str(p)) == st
    # A .gz name is gzip, as the CLI's `-o FILE.json.gz`; load reads it back.
    gz = tmp_path / "out.json.gz"
    roce_net.save_snapshot(st, gz)
    assert gz.read_bytes()[:2] == b"\x1f\x8b"
    assert roce_net.load_snapshot(gz) == st
    # Written by rename: no temporary file is left beside it.
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out.json", "out.json.gz"]
    # A directory that does not exist is a NotFoundError naming the path (with
    # its errno), and nothing is written.
    with pytest.raises(roce_net.NotFoundError, match="nodir") as e:
        roce_net.save_snapshot(st, tmp_path / "nodir" / "x.json")
    assert e.value.errno == 2
    assert not (tmp_path / "nodir").exists()


def test_every_registered_class_is_exported_and_parseable():
    """Every dataclass the native module can build is public and has from_json."""
    for cls in roce_net._types._ALL:
        assert getattr(roce_net, cls.__name__) is cls, cls
        assert cls.__name__ in roce_net.__all__
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
    with pytest.raises(roce_net.ParseError):
        roce_net.Finding.from_json("{}")
    nic = roce_net.LabNic(namespace="a", name="r0", address="198.18.0.11", prefix_len=24)
    assert roce_net.LabNic.from_dict(nic.to_dict()) == nic


def test_pickle_round_trip_keeps_native_original():
    import pickle

    st = roce_net.parse_snapshot(json.dumps(state_doc(2)))
    again = pickle.loads(pickle.dumps(st))
    assert again == st and again._native is not None
    plan = roce_net.plan(st, roce_net.Policy.from_dict({"version": 1}))
    p2 = pickle.loads(pickle.dumps(plan))
    assert p2 == plan and p2._native is not None
    r = st.routes[0]
    assert pickle.loads(pickle.dumps(r)) == r


def test_policy_pickles_and_copies_as_its_json():
    import copy
    import pickle

    pol = roce_net.Policy.from_dict({"version": 1, "routing": {"table_base": 2001}})
    again = pickle.loads(pickle.dumps(pol))
    assert again == pol and again.to_dict()["routing"]["table_base"] == 2001
    assert again != roce_net.Policy()
    assert copy.deepcopy(pol) == pol and copy.copy(pol) == pol


def test_state_policy_and_plan_cross_a_spawned_worker_process():
    """What the docs promise for multiprocessing: a fresh interpreter (spawn)
    unpickles the snapshot and the policy, plans, and sends the plan back."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    st = roce_net.parse_snapshot(json.dumps(state_doc(2)))
    pol = roce_net.Policy.from_dict({"version": 1, "routing": {"table_base": 2001}})
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx) as ex:
        remote = ex.submit(roce_net.plan, st, pol).result(timeout=120)
    assert remote == roce_net.plan(st, pol)
    assert any(c.op == "add_rule" for c in remote.changes)
