"""A program holding a ``Lab`` that gets SIGTERM or
SIGHUP removes the lab's namespaces, says so, and exits with 128 + the signal
(before, SIGTERM left them). SIGINT keeps Python's KeyboardInterrupt, which a
``with`` block already cleans up after. Under ``nohup`` a hangup is left
ignored. Each program starts with the signals as a terminal gives them, not
as this test run inherited them."""

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


def _as_from_a_terminal() -> None:
    """The program starts as one typed at a terminal does, with the three
    signals at their default action, whatever this test run inherited: a run
    started in the background by a shell without job control ignores SIGINT,
    and Python (rightly) then leaves it ignored, as ``roce_net`` leaves an
    ignored SIGTERM or SIGHUP (``nohup``) alone."""
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, signal.SIG_DFL)


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
        preexec_fn=_as_from_a_terminal,
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


def _as_under_nohup() -> None:
    """As ``nohup`` starts a program: SIGHUP ignored, the rest at default."""
    _as_from_a_terminal()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


@pytest.mark.needs_root
def test_a_program_started_under_nohup_keeps_its_lab_on_a_hangup() -> None:
    """roce_net handles SIGHUP only where it would have killed the program:
    under ``nohup`` a hangup changes nothing, and SIGTERM still cleans up."""
    p = subprocess.Popen(
        [sys.executable, "-c", PROGRAM.format(setup="lab = roce_net.Lab.seed(2, tag='sighup')")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_under_nohup,
    )
    try:
        prefix = p.stdout.readline().strip()
        assert prefix.startswith("rnt-sighup"), (prefix, p.stderr.read())
        built = _left(prefix)
        assert built, "the lab was built"
        p.send_signal(signal.SIGHUP)
        with pytest.raises(subprocess.TimeoutExpired):
            p.wait(timeout=1.5)
        assert _left(prefix) == built
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 128 + signal.SIGTERM, (p.returncode, err)
    assert _left(prefix) == [], err
