"""A program holding a ``Lab`` that gets SIGTERM or
SIGHUP removes the lab's namespaces, says so, and exits with 128 + the signal
(before, SIGTERM left them). SIGINT keeps Python's KeyboardInterrupt, which a
``with`` block already cleans up after."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent(
    """
    import sys, time
    import roce_net
    {setup}
    print(lab.prefix, flush=True)
    time.sleep(120)
    """
)


def _left(prefix: str) -> list:
    return sorted(n for n in os.listdir("/run/netns") if n.startswith(prefix + "-"))


@pytest.mark.needs_root
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
@pytest.mark.parametrize(
    "setup",
    [
        "lab = roce_net.Lab.seed(2, tag='sig')",
        "lab = roce_net.Lab.fleet(2, 2, tag='sigf')",
        "with roce_net.Lab.seed(2, tag='sigw') as lab:\n    print(lab.prefix, flush=True)\n    time.sleep(120)",
    ],
)
def test_a_signalled_program_removes_its_lab_and_says_so(sig: int, setup: str) -> None:
    p = subprocess.Popen(
        [sys.executable, "-c", PROGRAM.format(setup=setup)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        prefix = p.stdout.readline().strip()
        assert prefix.startswith("rnt-sig"), (prefix, p.stderr.read())
        assert _left(prefix), "the lab was built"
        p.send_signal(sig)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert _left(prefix) == [], err
    if sig == signal.SIGINT:
        # KeyboardInterrupt: the traceback, exit 1; `with`, close() or garbage
        # collection removed the lab.
        assert "KeyboardInterrupt" in err, err
    else:
        assert p.returncode == 128 + sig, (p.returncode, err)
        assert f"roce_net.Lab: interrupted by {signal.Signals(sig).name}: removed namespaces {prefix}-" in err, err
