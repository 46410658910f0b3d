"""A program holding a ``Lab`` that gets SIGTERM or
SIGHUP removes the lab's namespaces, says so, and exits with 128 + the signal
(before, SIGTERM left them). SIGINT keeps Python's KeyboardInterrupt, which a
``with`` block already cleans up after. Under ``nohup`` a hangup is left
ignored. Each program starts with the signals as a terminal gives them, not
as this test run inherited them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from typing import Iterator, Tuple

import pytest

PROGRAM = textwrap.dedent(
    """
    import signal, sys, time
    {signals}
    import roce_net
    {setup}
    print(lab.prefix, flush=True)
    time.sleep(120)
    """
)


def _left(prefix: str) -> list:
    return sorted(n for n in os.listdir("/run/netns") if n.startswith(prefix + "-"))


#: The program's signals as a terminal gives them, whatever this test run
#: inherited (set before roce_net is imported): a run started in the background
#: by a shell without job control ignores SIGINT, and Python (rightly) then
#: leaves it ignored, as ``roce_net`` leaves an ignored SIGTERM or SIGHUP
#: (``nohup``) alone.
FROM_A_TERMINAL = (
    "signal.signal(signal.SIGINT, signal.default_int_handler); "
    "signal.signal(signal.SIGTERM, signal.SIG_DFL); signal.signal(signal.SIGHUP, signal.SIG_DFL)"
)
#: As ``nohup`` starts it: SIGHUP ignored.
UNDER_NOHUP = FROM_A_TERMINAL + "; signal.signal(signal.SIGHUP, signal.SIG_IGN)"


@contextlib.contextmanager
def _program(signals: str, setup: str) -> Iterator[Tuple[subprocess.Popen, str]]:
    """The program with ``signals`` set and ``setup`` run, once its lab is
    built: it and its lab's prefix; killed if still running at the end."""
    p = subprocess.Popen(
        [sys.executable, "-c", PROGRAM.format(signals=signals, setup=setup)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        prefix = p.stdout.readline().strip()
        assert prefix.startswith("rnt-sig"), (prefix, p.stderr.read())
        assert _left(prefix), "the lab was built"
        yield p, prefix
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


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
    with _program(FROM_A_TERMINAL, setup) as (p, prefix):
        p.send_signal(sig)
        _, err = p.communicate(timeout=30)
    assert _left(prefix) == [], err
    if sig == signal.SIGINT:
        # KeyboardInterrupt: the traceback, exit 1; `with`, close() or garbage
        # collection removed the lab.
        assert "KeyboardInterrupt" in err, err
    else:
        assert p.returncode == 128 + sig, (p.returncode, err)
        assert f"roce_net.Lab: interrupted by {signal.Signals(sig).name}: removed namespaces {prefix}-" in err, err


@pytest.mark.needs_root
def test_a_program_started_under_nohup_keeps_its_lab_on_a_hangup() -> None:
    """roce_net handles SIGHUP only where it would have killed the program:
    under ``nohup`` a hangup changes nothing, and SIGTERM still cleans up."""
    with _program(UNDER_NOHUP, "lab = roce_net.Lab.seed(2, tag='sighup')") as (p, prefix):
        built = _left(prefix)
        p.send_signal(signal.SIGHUP)
        with pytest.raises(subprocess.TimeoutExpired):
            p.wait(timeout=1.5)
        assert _left(prefix) == built
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGTERM, (p.returncode, err)
    assert _left(prefix) == [], err
