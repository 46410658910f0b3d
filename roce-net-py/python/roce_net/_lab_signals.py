"""A program with a ``Lab`` that gets SIGTERM (a CI timeout, ``kill``) or SIGHUP
(a dropped SSH session) removes every lab namespace of the process, says which on
stderr, and exits with 128 + the signal (``SystemExit``, so ``finally`` blocks and
``with`` exits still run). Ctrl-C (SIGINT) stays Python's ``KeyboardInterrupt``,
which ``with`` and ``close()`` already clean up after.

Installed by the first ``Lab.seed``/``Lab.fleet`` of the main thread, for each
signal whose handler is still the default (a program's own handler is kept).
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType
from typing import List, Optional

_installed = False


def _on_signal(signum: int, _frame: Optional[FrameType]) -> None:
    from ._roce_net import Lab

    removed, failed = Lab._interrupt()
    parts: List[str] = []
    if removed:
        parts.append("removed namespaces " + " ".join(removed))
    for ns, err in failed:
        parts.append(f"NOT removed: {ns} ({err}; remove it with `ip netns del {ns}`)")
    what = "; ".join(parts) or "no lab namespaces were left"
    name = signal.Signals(signum).name
    print(f"roce_net.Lab: interrupted by {name}: {what}", file=sys.stderr, flush=True)
    raise SystemExit(128 + signum)


def install() -> None:
    """Handle SIGTERM and SIGHUP as above (main thread only; once)."""
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    for s in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(s) is signal.SIG_DFL:
            signal.signal(s, _on_signal)
    _installed = True
