"""The confirm-timeout watchdog, run as a detached process.

``Host.apply(plan, confirm_timeout=...)`` arms the deadline and starts
``python -m roce_net._watchdog`` in its own session *before* the first change, so
it survives the process (and the SSH session) that applies. It waits for the
deadline and rolls the guarded apply back (also one that never finished) unless
``Host.confirm()`` came first; it only acts on that apply's journal, in the
namespace with the cookie it was given.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import Optional, Sequence, Union

_PathArg = Union[str, "os.PathLike[str]", None]


def spawn(
    netns: Optional[str],
    netns_path: _PathArg,
    etc_root: _PathArg,
    state_dir: _PathArg,
    apply_id: str,
    deadline: int,
    cookie: int,
    boot_id: str,
) -> int:
    """Start the watchdog guarding one armed apply; returns its pid."""
    cmd = [sys.executable, "-m", "roce_net._watchdog"]
    cmd += ["--apply-id", apply_id, "--deadline", str(deadline)]
    cmd += ["--cookie", str(cookie), "--boot-id", boot_id]
    if netns is not None:
        cmd += ["--netns", netns]
    elif netns_path is not None:
        cmd += ["--netns-path", os.fspath(netns_path)]
    if etc_root is not None:
        cmd += ["--etc-root", os.fspath(etc_root)]
    if state_dir is not None:
        cmd += ["--state-dir", os.fspath(state_dir)]
    p = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    return p.pid


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m roce_net._watchdog")
    ap.add_argument("--netns")
    ap.add_argument("--netns-path")
    ap.add_argument("--etc-root")
    ap.add_argument("--state-dir")
    ap.add_argument("--apply-id")
    ap.add_argument("--deadline", type=int)
    ap.add_argument("--cookie", type=int)
    ap.add_argument("--boot-id")
    a = ap.parse_args(argv)
    import roce_net

    host = roce_net.Host(netns=a.netns, netns_path=a.netns_path, etc_root=a.etc_root)
    try:
        host._watchdog(
            state_dir=a.state_dir,
            apply_id=a.apply_id,
            deadline=a.deadline,
            cookie=a.cookie,
            boot_id=a.boot_id,
        )
    except roce_net.RoceNetError:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
