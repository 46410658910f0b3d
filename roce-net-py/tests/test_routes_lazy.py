"""HostState.routes of a snapshot from the library: a lazy, immutable RouteSeq
backed by the Rust routes, that behaves like the tuple of Routes it replaced."""

from __future__ import annotations

import collections
import collections.abc
import copy
import dataclasses
import json
import pickle

import pytest

import roce_net
from roce_net._roce_net import RouteSeq
from _fixtures import state_doc

POLICY = {"version": 1, "arp": {"arp_ignore": 1, "arp_announce": 2}, "rp_filter": "loose"}


@pytest.fixture
def doc():
    return state_doc(4, extra_routes=20)


@pytest.fixture
def state(doc):
    return roce_net.parse_snapshot(json.dumps(doc))


def _expected(doc):
    """The routes as Route objects built one by one from the document."""
    return tuple(roce_net.Route.from_dict(r) for r in doc["routes"])


def test_routes_is_a_lazy_sequence_of_routes(state, doc):
    routes = state.routes
    assert isinstance(routes, RouteSeq)
    assert isinstance(routes, collections.abc.Sequence)
    assert not isinstance(routes, tuple)
    assert len(routes) == len(doc["routes"]) > 20
    assert bool(routes)
    assert all(type(r) is roce_net.Route for r in routes)
    assert repr(routes) == f"<RouteSeq: {len(doc['routes'])} routes>"


def test_repeated_names_share_one_string(state):
    # dev and scope values repeat over many routes: one Python string per value
    # (keeps a materialised 100k-route table about 12 MiB smaller).
    by_dev = {}
    for r in state.routes:
        if r.dev is not None:
            assert by_dev.setdefault(r.dev, r.dev) is r.dev
    assert len(by_dev) >= 2
    a, b = state.routes[5], state.routes[13]
    assert a.dev == b.dev and a.dev is b.dev
    assert a.scope == b.scope and a.scope is b.scope
    assert a.dst != b.dst


def test_indexing(state, doc):
    exp = _expected(doc)
    n = len(exp)
    assert state.routes[0] == exp[0]
    assert state.routes[n - 1] == exp[-1]
    assert state.routes[-1] == exp[-1]
    assert state.routes[-n] == exp[0]
    assert state.routes[5].to_dict() == doc["routes"][5]
    for bad in (n, -n - 1, 10**6):
        with pytest.raises(IndexError):
            state.routes[bad]
    with pytest.raises(TypeError, match="integers or slices"):
        state.routes["0"]  # type: ignore[call-overload]


def test_slices_are_tuples(state, doc):
    exp = _expected(doc)
    for s in (slice(None), slice(2, 7), slice(-3, None), slice(None, None, -1),
              slice(1, 20, 3), slice(10, 2, -2), slice(5, 5), slice(100, 200)):
        got = state.routes[s]
        assert isinstance(got, tuple)
        assert got == exp[s], s
    with pytest.raises(ValueError):
        state.routes[::0]


def test_iteration_and_reversed(state, doc):
    exp = _expected(doc)
    assert tuple(state.routes) == exp
    assert [r.dst for r in state.routes] == [r["dst"] for r in doc["routes"]]
    assert tuple(reversed(state.routes)) == exp[::-1]
    it = iter(state.routes)
    assert next(it) == exp[0] and next(it) == exp[1]
    assert len(list(it)) == len(exp) - 2


def test_equality(state, doc):
    exp = _expected(doc)
    assert state.routes == exp and exp == state.routes
    assert state.routes == list(exp)
    assert state.routes == collections.UserList(exp)
    assert state.routes != "".join(r.dst for r in exp)
    assert not (state.routes != exp)
    assert state.routes != exp[:-1]
    assert state.routes != exp[:-1] + (exp[0],)
    assert state.routes != "not routes"
    assert hash(state.routes) == hash(exp)
    # two snapshots of the same document: different Rust objects, equal routes
    other = roce_net.parse_snapshot(json.dumps(doc))
    assert other.routes is not state.routes and other.routes == state.routes
    assert other == state
    changed = json.loads(json.dumps(doc))
    changed["routes"][3]["metric"] = 4242
    assert roce_net.parse_snapshot(json.dumps(changed)).routes != state.routes


def test_contains_count_index(state, doc):
    exp = _expected(doc)
    assert exp[4] in state.routes
    assert dataclasses.replace(exp[4], metric=4242) not in state.routes
    assert "198.18.0.0/24" not in state.routes
    assert state.routes.count(exp[4]) == 1
    assert state.routes.count(None) == 0
    assert state.routes.index(exp[4]) == 4
    assert state.routes.index(exp[-1], -1) == len(exp) - 1
    with pytest.raises(ValueError):
        state.routes.index(exp[4], 5)
    with pytest.raises(ValueError):
        state.routes.index(exp[4], 0, 4)


def test_immutable(state):
    first = state.routes[0]
    with pytest.raises(TypeError):
        state.routes[0] = first  # type: ignore[index]
    with pytest.raises(TypeError):
        del state.routes[0]  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        state.routes.append(first)  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        state.routes.extra = 1  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.routes = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.routes[0].table = 7  # type: ignore[misc]


def test_to_dict_and_json_unchanged(state, doc):
    want = json.loads(json.dumps(doc))
    assert state.to_dict()["routes"] == want["routes"]
    assert json.loads(state.to_json())["routes"] == want["routes"]
    # the Python walk (what a HostState without its native copy uses) agrees
    walked = roce_net._types._Record.to_dict(state)
    assert json.loads(json.dumps(walked))["routes"] == want["routes"]
    assert [r.to_dict() for r in state.routes] == want["routes"]


def test_pickle_and_copy(state):
    back = pickle.loads(pickle.dumps(state))
    assert isinstance(back.routes, RouteSeq) and back._native is not None
    assert back == state and back.routes == state.routes
    seq = pickle.loads(pickle.dumps(state.routes))
    assert isinstance(seq, tuple) and seq == state.routes
    assert copy.deepcopy(state) == state
    assert copy.copy(state.routes) == state.routes


def test_state_without_native_copy_still_works(state):
    # A HostState rebuilt in Python around the lazy sequence (no _native) goes
    # through its JSON: doctor and plan must see the same routes.
    built = roce_net.HostState(**{
        f.name: getattr(state, f.name) for f in dataclasses.fields(state) if f.name != "_native"
    })
    assert built._native is None and built == state
    assert built.to_dict() == state.to_dict()
    pol = roce_net.Policy.from_dict(POLICY)
    assert roce_net.plan(built, pol).to_dict() == roce_net.plan(state, pol).to_dict()


def test_doctor_and_plan_on_lazy_state(state):
    findings = roce_net.doctor(state)
    assert findings and all(isinstance(f, roce_net.Finding) for f in findings)
    plan = roce_net.plan(state, roce_net.Policy.from_dict(POLICY))
    assert not plan.is_empty()
    # the plan adds the routes the snapshot lacks (it read them from the Rust copy)
    adds = [c.route for c in plan.changes if c.op == "add_route"]
    assert adds and all(r is not None and r not in state.routes for r in adds)
    dels = [c.route for c in plan.changes if c.op == "delete_route"]
    assert dels and all(r in state.routes for r in dels)


def test_a_python_built_state_keeps_tuples(state):
    built = roce_net.HostState(**{
        **{f.name: getattr(state, f.name) for f in dataclasses.fields(state) if f.name != "_native"},
        "routes": tuple(state.routes),
    })
    assert isinstance(built.routes, tuple) and built == state


@pytest.mark.needs_root
def test_namespace_snapshot_routes_are_lazy(make_netns):
    ns = make_netns()
    ns.add_nic("rn0", "198.18.20.1/24")
    for i in range(50):
        ns.run("route", "add", f"198.18.21.{i}/32", "dev", "rn0", "table", str(100 + i % 3))
    st = roce_net.Host(netns=ns.name).snapshot()
    assert isinstance(st.routes, RouteSeq)
    mine = [r for r in st.routes if r.dst.startswith("198.18.21.")]
    assert len(mine) == 50
    assert {r.table for r in mine} == {100, 101, 102}
    assert all(r.dev == "rn0" and isinstance(r, roce_net.Route) for r in mine)
    assert st.routes == tuple(st.routes)
    assert st.to_dict()["routes"] == [r.to_dict() for r in st.routes]
    assert roce_net.doctor(st) is not None
