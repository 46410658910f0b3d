"""Errors map to RoceNetError subclasses with kind, errno, extack and context."""

from __future__ import annotations

import errno
import json

import pytest

import roce_net
from _fixtures import state_doc


def test_missing_netns_is_not_found():
    with pytest.raises(roce_net.NotFoundError) as ei:
        roce_net.Host(netns="rnt-py-does-not-exist")
    e = ei.value
    assert isinstance(e, roce_net.RoceNetError) and isinstance(e, LookupError)
    assert e.kind == "not_found"
    assert "rnt-py-does-not-exist" in e.message and "ip netns list" in e.message
    assert e.extack is None and e.context == ()


def test_missing_netns_path_is_not_found(tmp_path):
    with pytest.raises(roce_net.NotFoundError):
        roce_net.Host(netns_path=tmp_path / "nope")


def test_invalid_netns_name():
    with pytest.raises(roce_net.InvalidInputError) as ei:
        roce_net.Host(netns="a/b")
    assert ei.value.kind == "invalid_input" and isinstance(ei.value, ValueError)


def test_bad_snapshot_file_is_parse_error_with_context(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{ not json")
    with pytest.raises(roce_net.ParseError) as ei:
        roce_net.load_snapshot(p)
    e = ei.value
    assert e.kind == "parse" and isinstance(e, ValueError)
    assert "not valid JSON" in e.message
    assert e.context == (f"in snapshot {p}",)
    assert str(e).startswith(f"in snapshot {p}: ")


def test_wrong_schema_version_is_parse_error():
    doc = state_doc(1) | {"schema_version": 99}
    with pytest.raises(roce_net.ParseError, match="schema_version 99"):
        roce_net.parse_snapshot(json.dumps(doc))


def test_missing_snapshot_file_has_errno(tmp_path):
    with pytest.raises(roce_net.NotFoundError) as ei:
        roce_net.load_snapshot(tmp_path / "missing.json")
    assert ei.value.errno == errno.ENOENT


@pytest.mark.needs_root
def test_kernel_errors_carry_errno(seed_lab):
    import errno as E

    host = seed_lab.host()
    with pytest.raises(roce_net.NetlinkError) as ei:
        host.route_get("203.0.113.1")  # no default route in the lab
    e = ei.value
    assert e.kind == "netlink" and e.errno == E.ENETUNREACH
    assert "203.0.113.1" in e.message


@pytest.mark.needs_root
def test_missing_privilege_is_permission_error(seed_lab):
    """Without CAP_SYS_ADMIN, entering the namespace fails with EPERM, mapped to
    RoceNetPermissionError (also a PermissionError) and told what to do."""
    import shutil
    import subprocess
    import sys

    from conftest import cannot_run

    if shutil.which("setpriv") is None:
        cannot_run("needs setpriv (util-linux) to drop CAP_SYS_ADMIN")
    code = (
        "import roce_net, sys\n"
        "try:\n"
        f"    roce_net.Host(netns={seed_lab.host_ns!r}).snapshot()\n"
        "except roce_net.RoceNetPermissionError as e:\n"
        "    assert isinstance(e, PermissionError) and e.kind == 'permission' and e.errno == 1\n"
        "    assert 'CAP_SYS_ADMIN' in str(e)\n"
        "    print('ok')\n"
    )
    r = subprocess.run(
        ["setpriv", "--bounding-set", "-sys_admin", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.stdout.strip() == "ok", r.stdout + r.stderr
