"""Benchmark (not a test): a 100k-route snapshot into Python objects and back.

    .venv/bin/python roce-net-py/tests/bench_load.py [routes]

Prints the best of 5 runs of each step next to json.loads of the same file.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import roce_net  # noqa: E402
from _fixtures import state_doc  # noqa: E402


def best(f, n=5):
    t = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return min(t)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    text = json.dumps(state_doc(4, n))
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "snap.json"
        p.write_text(text)
        st = roce_net.load_snapshot(p)
        pol = roce_net.Policy.from_dict({"version": 1})
        rows = [
            ("json.loads (reference)", best(lambda: json.loads(text))),
            ("load_snapshot -> HostState", best(lambda: roce_net.load_snapshot(p))),
            ("HostState.to_dict()", best(st.to_dict)),
            ("HostState.to_json()", best(st.to_json)),
            ("doctor(state)", best(lambda: roce_net.doctor(st))),
            ("plan(state, policy)", best(lambda: roce_net.plan(st, pol))),
        ]
    print(f"{len(st.routes)} routes")
    for name, t in rows:
        print(f"{name:32s} {t * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
