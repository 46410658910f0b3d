"""Host handles: snapshots of lab namespaces, GIL release, threads, asyncio."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import roce_net
from _fixtures import state_doc


def test_host_properties(tmp_path):
    h = roce_net.Host(sysfs_root=tmp_path, etc_root=tmp_path / "etc")
    assert h.netns is None and h.netns_path is None
    assert h.sysfs_root == tmp_path and h.etc_root == tmp_path / "etc"
    with pytest.raises(ValueError):
        roce_net.Host(netns="x", netns_path="/proc/self/ns/net")
    p = roce_net.Host(netns_path="/proc/self/ns/net")
    assert p.netns is None and str(p.netns_path) == "/proc/self/ns/net"


def test_host_pickles_as_the_arguments_that_open_it(tmp_path):
    import copy
    import pickle

    h = roce_net.Host(sysfs_root=tmp_path, etc_root=tmp_path / "etc")
    again = pickle.loads(pickle.dumps(h))
    assert (again.netns, again.netns_path) == (None, None)
    assert (again.sysfs_root, again.etc_root) == (tmp_path, tmp_path / "etc")
    p = copy.deepcopy(roce_net.Host(netns_path="/proc/self/ns/net", etc_root=tmp_path))
    assert str(p.netns_path) == "/proc/self/ns/net" and p.etc_root == tmp_path


def _interface_names(host):
    return sorted(i.name for i in host.snapshot().interfaces)


@pytest.mark.needs_root
def test_a_pickled_host_snapshots_its_namespace_in_a_worker_process(make_netns):
    """A Host sent to a spawned worker opens the same namespace there by name."""
    import multiprocessing
    import pickle
    from concurrent.futures import ProcessPoolExecutor

    ns = make_netns()
    ns.add_nic("rn0", "198.18.10.21/24")
    h = roce_net.Host(netns=ns.name)
    assert pickle.loads(pickle.dumps(h)).netns == ns.name
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx) as ex:
        names = ex.submit(_interface_names, h).result(timeout=120)
    assert "rn0" in names and names == _interface_names(h)


@pytest.mark.needs_root
def test_io_releases_the_gil(make_netns):
    """A call blocked in the kernel must let other Python threads run.

    An ARP probe for an address nobody answers waits in poll(2) for its whole
    timeout. The child process starts it in a thread and then, running Python
    code, waits until that thread's task is seen sleeping in poll
    (/proc/self/task/*/wchan). If the probe held the GIL while blocked, the
    waiting loop could not run until the probe had returned, and would never see
    it blocked; it then fails. No timing is asserted. (A FIFO as the namespace
    file no longer blocks: it is opened O_NONBLOCK and refused at once.)
    """
    ns = make_netns()
    ns.add_nic("r0", "198.18.0.10/24")
    script = textwrap.dedent(
        f"""
        import glob, threading, roce_net
        host = roce_net.Host(netns={ns.name!r})
        done = []
        def probe():
            done.append(host.probe_arp("r0", "198.18.0.99", count=1, timeout=5.0))
        def blocked_in_poll():
            for w in glob.glob("/proc/self/task/*/wchan"):
                try:
                    if "poll" in open(w).read():
                        return True
                except OSError:
                    pass
            return False
        t = threading.Thread(target=probe)
        t.start()
        seen = False
        while t.is_alive():              # Python code: needs the GIL
            if blocked_in_poll():
                seen = True
                break
        t.join()
        assert seen, "never saw the probe blocked in poll while Python ran"
        assert done and len(done[0].replies) == 0, done
        print("ok")
        """
    )
    r = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "ok"


def test_load_snapshot_from_many_threads(tmp_path):
    paths = []
    for i in range(4):
        doc = state_doc(1 + i)
        doc["hostname"] = f"node-{i}"
        p = tmp_path / f"s{i}.json"
        p.write_text(json.dumps(doc))
        paths.append(p)
    with ThreadPoolExecutor(4) as ex:
        states = list(ex.map(roce_net.load_snapshot, paths * 3))
    assert [s.hostname for s in states] == [f"node-{i}" for i in range(4)] * 3
    assert [len(s.interfaces) for s in states[:4]] == [2, 3, 4, 5]


def test_usable_inside_asyncio(tmp_path):
    p = tmp_path / "s.json"
    p.write_text(json.dumps(state_doc(2)))

    async def main():
        direct = roce_net.load_snapshot(p)  # plain sync call inside a coroutine
        loop = asyncio.get_running_loop()
        a, b = await asyncio.gather(
            loop.run_in_executor(None, roce_net.load_snapshot, p),
            loop.run_in_executor(None, roce_net.load_snapshot, p),
        )
        with pytest.raises(roce_net.NotFoundError):
            await loop.run_in_executor(None, roce_net.Host, "rnt-py-missing")
        return direct, a, b

    direct, a, b = asyncio.run(main())
    assert direct == a == b


# ---- lab namespaces (root) -------------------------------------------------


@pytest.mark.needs_root
def test_snapshot_of_a_lab_namespace(make_netns):
    ns = make_netns()
    ns.add_nic("rn0", "198.18.10.11/24")
    ns.add_nic("rn1", "198.18.10.12/24")
    st = roce_net.Host(netns=ns.name).snapshot()
    assert st.netns == ns.name
    names = {i.name for i in st.interfaces}
    assert {"lo", "rn0", "rn1"} <= names
    assert sorted(a.address for a in st.addresses if a.ifname.startswith("rn") and "." in a.address) == [
        "198.18.10.11",
        "198.18.10.12",
    ]
    main_routes = {(r.dst, r.dev) for r in st.routes if r.table == 254}
    assert ("198.18.10.0/24", "rn0") in main_routes
    # Nothing of the test machine's own namespace leaks in.
    assert not any(a.address.startswith("198.18.10.") for a in roce_net.Host().snapshot().addresses)
    assert json.loads(st.to_json()) == st.to_dict()


@pytest.mark.needs_root
def test_two_threads_snapshot_two_namespaces(make_netns):
    a, b = make_netns(), make_netns()
    a.add_nic("rna", "198.18.11.1/24")
    b.add_nic("rnb", "198.18.12.1/24")
    barrier = threading.Barrier(2)

    def snap(name):
        h = roce_net.Host(netns=name)
        barrier.wait()
        return [h.snapshot() for _ in range(5)]

    with ThreadPoolExecutor(2) as ex:
        ra, rb = ex.map(snap, [a.name, b.name])
    for st in ra:
        assert st.netns == a.name and st.interface("rna") and not st.interface("rnb")
    for st in rb:
        assert st.netns == b.name and st.interface("rnb") and not st.interface("rna")


@pytest.mark.needs_root
def test_snapshot_inside_asyncio(make_netns):
    ns = make_netns()
    ns.add_nic("rn0", "198.18.13.1/24")
    h = roce_net.Host(netns=ns.name)

    async def main():
        direct = h.snapshot()
        loop = asyncio.get_running_loop()
        via = await loop.run_in_executor(None, h.snapshot)
        return direct, via

    direct, via = asyncio.run(main())
    assert direct.interface("rn0") and via.interface("rn0")
