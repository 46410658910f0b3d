#!/usr/bin/env python3
"""Benchmark (not a test, not run in CI): roce_net.Host.snapshot() against
pyroute2's route dump of the same namespace, side by side in one run.

    sudo .venv/bin/python benches/python_snapshot.py [--routes 100000] [--runs 5]

Needs root (it creates a network namespace), the roce_net wheel and pyroute2
installed in the interpreter that runs it. What it does:

1. creates the namespace ``rnt-bp-<pid>`` (``--ns-prefix``; removed at the end, on failure too),
   with a veth pair inside it (198.18.0.1/24 and 198.18.0.2/24) and loads
   ``--routes`` IPv4 /32 routes in 198.18.0.0/15 through ``ip -n NS -batch``,
   spread over tables main, 100, 1000 and 70000, all ``dev v0``;
2. runs every measurement in a fresh child process (this file with
   ``--child KIND``), interleaved round after round, the order alternating:

   * ``roce``: ``roce_net.Host(netns=NS).snapshot()`` (the whole snapshot:
     links, addresses, neighbours, routes of every table and family, rules,
     sysctls, RDMA) and then ``len(state.routes)``;
   * ``pyroute2``: ``with NetNS(NS) as ns: routes = list(ns.get_routes())``
     (no table and no family given: pyroute2 dumps every table of every family
     and filters nothing), and then ``len(routes)``;

   each child also times reading one field of every route (``r.dst`` /
   ``r.get('dst')``), which is what a caller does next;
3. measures the peak RSS of each child twice: its own ``VmHWM`` and the
   ``ru_maxrss`` that GNU time (``/usr/bin/time``, needed) reports from
   ``wait4`` (which also covers the helper process pyroute2 forks to open a
   socket in a namespace);
4. runs baseline children that only import each library (and an empty one),
   so the library's own footprint can be told apart from the data's.

The route counts of both libraries must agree, else the run fails.
"""

from __future__ import annotations

import argparse
import atexit
import ipaddress
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

TABLES = (254, 100, 1000, 70000)
FIRST = int(ipaddress.IPv4Address("198.18.1.0"))
LAST = int(ipaddress.IPv4Address("198.19.255.255"))
TIME = "/usr/bin/time"  # GNU time, for the children's peak RSS


def vm(key: str) -> int:
    """A `Vm*` line of /proc/self/status, in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {key} in /proc/self/status")


# ---------------------------------------------------------------- children


def child(kind: str, ns: str) -> None:
    """One measurement; prints one JSON line on stdout."""
    out: dict = {"kind": kind}
    t0 = time.perf_counter()
    if kind == "empty":
        pass
    elif kind in ("import-roce", "roce"):
        import roce_net
    elif kind in ("import-pyroute2", "pyroute2"):
        from pyroute2 import NetNS
    else:
        raise SystemExit(f"unknown child kind {kind}")
    out["import_s"] = time.perf_counter() - t0
    out["rss_after_import_kib"] = vm("VmRSS")

    if kind == "roce":
        t0 = time.perf_counter()
        host = roce_net.Host(netns=ns)
        state = host.snapshot()
        t1 = time.perf_counter()
        n = len(state.routes)
        t2 = time.perf_counter()
        dsts = [r.dst for r in state.routes]
        t3 = time.perf_counter()
        out.update(
            op_s=t1 - t0,
            op_len_s=t2 - t0,
            touch_s=t3 - t2,
            routes=n,
            v4=sum(1 for r in state.routes if r.family == "inet"),
            per_table=table_counts(r.table for r in state.routes),
            sample=dsts[len(dsts) // 2] if dsts else None,
        )
    elif kind == "pyroute2":
        t0 = time.perf_counter()
        with NetNS(ns) as ipr:
            topen = time.perf_counter()
            routes = list(ipr.get_routes())
            t1 = time.perf_counter()
        n = len(routes)
        t2 = time.perf_counter()
        dsts = [r.get("dst") for r in routes]
        t3 = time.perf_counter()
        out.update(
            open_s=topen - t0,
            op_s=t1 - t0,
            op_len_s=t2 - t0,
            touch_s=t3 - t2,
            routes=n,
            v4=sum(1 for r in routes if r["family"] == 2),
            per_table=table_counts(r.get("table") for r in routes),
            sample=dsts[len(dsts) // 2] if dsts else None,
        )
    out["vmhwm_kib"] = vm("VmHWM")
    print(json.dumps(out), flush=True)


def table_counts(tables) -> dict:
    c: dict = {}
    for t in tables:
        c[str(t)] = c.get(str(t), 0) + 1
    return c


# ---------------------------------------------------------------- parent


def run_child(kind: str, ns: str) -> dict:
    """Run one measuring child; add its wall time and its peak RSS as GNU time
    reports it.

    GNU time, a small process, forks and waits for the child and prints the
    ``ru_maxrss`` from ``wait4``: the peak of the child and of the processes it
    waited for (pyroute2's namespace helper). Taking ``wait4`` here instead
    would count this big parent: Python starts children with ``vfork``, and the
    kernel carries the parent's RSS high-water mark over the ``exec``.
    """
    with tempfile.NamedTemporaryFile("r", prefix="rnt-bp-", suffix=".rss") as rss:
        cmd = [TIME, "-f", "%M", "-o", rss.name, sys.executable, os.path.abspath(__file__)]
        t0 = time.perf_counter()
        p = subprocess.run(cmd + ["--child", kind, "--netns", ns], stdout=subprocess.PIPE, check=False)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise RuntimeError(f"child {kind} failed with status {p.returncode}")
        maxrss = int(rss.read().split()[-1])
    res = json.loads(p.stdout)
    res["wall_s"] = wall
    res["maxrss_kib"] = maxrss
    return res


def sh(*args: str) -> None:
    subprocess.run(args, check=True)


def setup(ns: str, routes: int) -> None:
    if FIRST + routes - 1 > LAST:
        raise SystemExit(f"at most {LAST - FIRST + 1} routes fit in 198.18.1.0-198.19.255.255")
    sh("ip", "netns", "add", ns)
    sh("ip", "-n", ns, "link", "set", "lo", "up")
    sh("ip", "-n", ns, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
    sh("ip", "-n", ns, "addr", "add", "198.18.0.1/24", "dev", "v0")
    sh("ip", "-n", ns, "addr", "add", "198.18.0.2/24", "dev", "v1")
    sh("ip", "-n", ns, "link", "set", "v0", "up")
    sh("ip", "-n", ns, "link", "set", "v1", "up")
    with tempfile.NamedTemporaryFile("w", prefix="rnt-bp-", suffix=".batch") as f:
        for i in range(routes):
            dst = ipaddress.IPv4Address(FIRST + i)
            f.write(f"route add {dst}/32 dev v0 table {TABLES[i % len(TABLES)]}\n")
        f.flush()
        sh("ip", "-n", ns, "-batch", f.name)
    # let IPv6 duplicate address detection on the veth pair settle, so every
    # run sees the same link-local routes
    time.sleep(3)


_removed: set = set()


def teardown(ns: str) -> None:
    if ns in _removed:
        return
    _removed.add(ns)
    subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)


def med(xs) -> float:
    return statistics.median(xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--routes", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--ns-prefix", default="rnt-bp", help="namespace name prefix (the pid is appended)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--netns", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child, a.netns)
        return
    if os.geteuid() != 0:
        raise SystemExit("needs root: it creates a network namespace")
    if not os.access(TIME, os.X_OK):
        raise SystemExit(f"needs GNU time at {TIME} (apt-get install time) for peak RSS")

    ns = f"{a.ns_prefix}-{os.getpid()}"
    atexit.register(teardown, ns)
    try:
        t0 = time.perf_counter()
        setup(ns, a.routes)
        print(f"namespace {ns}: {a.routes} routes loaded in {time.perf_counter() - t0:.1f} s")
        measure(ns, a.runs, a.routes)
    finally:
        teardown(ns)


def measure(ns: str, runs: int, nroutes: int) -> None:
    import pyroute2  # only for its version; measurements run in children

    import roce_net  # noqa: F401  (fail early when the wheel is missing)

    print(
        f"python {sys.version.split()[0]}, pyroute2 {pyroute2.__version__}, "
        f"kernel {os.uname().release}, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.1f}"
    )

    # warm-up (page cache for both libraries), not counted
    run_child("roce", ns)
    run_child("pyroute2", ns)

    res: dict = {k: [] for k in ("roce", "pyroute2", "empty", "import-roce", "import-pyroute2")}
    for i in range(runs):
        order = ("roce", "pyroute2") if i % 2 == 0 else ("pyroute2", "roce")
        for k in order + ("empty", "import-roce", "import-pyroute2"):
            res[k].append(run_child(k, ns))

    r, p = res["roce"], res["pyroute2"]
    for x in r + p:
        if x["routes"] != r[0]["routes"] or x["routes"] != p[0]["routes"]:
            raise SystemExit(
                f"route counts disagree: roce_net {[y['routes'] for y in r]}, "
                f"pyroute2 {[y['routes'] for y in p]}"
            )
    if r[0]["per_table"] != p[0]["per_table"]:
        raise SystemExit(f"per-table counts disagree: {r[0]['per_table']} vs {p[0]['per_table']}")
    if r[0]["v4"] < nroutes:
        raise SystemExit(f"only {r[0]['v4']} IPv4 routes seen, {nroutes} loaded")

    def ms(xs, key):
        return med([x[key] for x in xs]) * 1000

    def mib(xs, key):
        return med([x[key] for x in xs]) / 1024

    print(f"\nroutes seen by both: {r[0]['routes']} ({r[0]['v4']} IPv4), per table {r[0]['per_table']}")
    print(f"medians of {runs} interleaved runs, each a fresh child process; load now {os.getloadavg()[0]:.1f}\n")
    rows = [
        ("call (snapshot() / open NetNS + list(get_routes()))", ms(r, "op_s"), ms(p, "op_s")),
        ("call + len(routes)", ms(r, "op_len_s"), ms(p, "op_len_s")),
        ("then read .dst of every route", ms(r, "touch_s"), ms(p, "touch_s")),
        ("whole child process (start, import, call, exit)", ms(r, "wall_s"), ms(p, "wall_s")),
        ("import of the library", ms(r, "import_s"), ms(p, "import_s")),
    ]
    print(f"{'time (ms)':52s} {'roce_net':>10s} {'pyroute2':>10s} {'ratio':>8s}")
    for name, a_, b_ in rows:
        print(f"{name:52s} {a_:10.1f} {b_:10.1f} {b_ / a_:7.1f}x")
    print(f"{'  of which pyroute2 NetNS open':52s} {'':10s} {ms(p, 'open_s'):10.1f}")

    base_e = mib(res["empty"], "vmhwm_kib")
    base_r = mib(res["import-roce"], "vmhwm_kib")
    base_p = mib(res["import-pyroute2"], "vmhwm_kib")
    hr, hp = mib(r, "vmhwm_kib"), mib(p, "vmhwm_kib")
    wr, wp = mib(r, "maxrss_kib"), mib(p, "maxrss_kib")
    print(f"\n{'peak RSS (MiB)':52s} {'roce_net':>10s} {'pyroute2':>10s} {'ratio':>8s}")
    mrows = [
        ("child VmHWM", hr, hp),
        ("child ru_maxrss (GNU time, wait4)", wr, wp),
        ("baseline: python + import only (VmHWM)", base_r, base_p),
        ("VmHWM above the import-only baseline", hr - base_r, hp - base_p),
    ]
    for name, a_, b_ in mrows:
        print(f"{name:52s} {a_:10.1f} {b_:10.1f} {b_ / a_:7.1f}x")
    print(f"{'baseline: empty python (VmHWM)':52s} {base_e:10.1f}")

    print("\nall runs (ms, call / child wall; MiB VmHWM):")
    for k in ("roce", "pyroute2"):
        print(
            f"  {k:9s} "
            + ", ".join(f"{x['op_s'] * 1000:.0f}/{x['wall_s'] * 1000:.0f}" for x in res[k])
            + "; "
            + ", ".join(f"{x['vmhwm_kib'] / 1024:.1f}" for x in res[k])
        )
    print(f"  sample dst: roce_net {r[0]['sample']!r}, pyroute2 {p[0]['sample']!r}")


if __name__ == "__main__":
    main()
