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


def test_io_releases_the_gil(tmp_path):
    """A snapshot blocked in the kernel must let other Python threads run.

    The namespace "file" is a FIFO: opening it (which the library does to enter the
    namespace) blocks until a writer opens it. The child process waits, running
    Python code, until one of its threads is blocked in that open (seen in
    /proc/self/task/*/wchan), and only then opens the writer end. If the snapshot
    held the GIL while blocked, the waiting loop could never run again and the
    child would hang; the subprocess timeout turns that deadlock into a failure
    (no timing is asserted).
    """
    fifo = tmp_path / "ns-fifo"
    os.mkfifo(fifo)
    script = textwrap.dedent(
        f"""
        import glob, os, threading, time, roce_net
        errors = []
        def snap():
            try:
                roce_net.Host(netns_path={str(fifo)!r}).snapshot()
            except roce_net.RoceNetError as e:
                errors.append(e)
        def blocked_in_fifo_open():
            for w in glob.glob("/proc/self/task/*/wchan"):
                try:
                    if open(w).read().strip() in ("wait_for_partner", "fifo_open"):
                        return True
                except OSError:
                    pass
            return False
        t = threading.Thread(target=snap)
        t.start()
        for _ in range(100000):          # Python code: needs the GIL
            if blocked_in_fifo_open():
                break
            time.sleep(0.001)
        else:
            raise SystemExit("the snapshot never blocked in the FIFO open")
        fd = os.open({str(fifo)!r}, os.O_WRONLY)
        os.close(fd)
        t.join()
        # setns() on a FIFO fails: the error names the file.
        assert len(errors) == 1 and {str(fifo)!r} in str(errors[0]), errors
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
