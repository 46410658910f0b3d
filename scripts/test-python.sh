#!/usr/bin/env bash
# Tests the Python binding as users get it: the portable wheel that
# scripts/build-artifacts.sh builds (abi3, manylinux2014 / glibc 2.17, checked
# there with auditwheel), installed into .venv; the stubs (stubtest, mypy
# --strict); ansible-test sanity and units on the roce_net.roce collection; then
# pytest on the installed wheel (API, errors, frozen types, GIL release,
# asyncio, stubs, namespace labs) and the Ansible collection against lab
# namespaces (one host and a fleet; the mesh playbook also against the Slurm
# script, which needs Debian's Slurm daemons and the CLI in dist/:
# scripts/test.sh installs them and builds it before this script's root part).
# Before the stubs: that roce_net/_types.py and the result-type block of
# roce_net/__init__.py are what scripts/gen_python_types.py generates from the
# built module's schema.
#
# Usage: scripts/test-python.sh [--build-part | --root-part]   (default: both)
#        --build-part: venv, tools, wheel, stub checks, ansible-test; needs no root
#        (scripts/test.sh runs it as the building user). --root-part: pytest with
#        the needs_root (namespace) tests. Both: the two in one go, as root.
# Env:   SKIP_PIP=1 skips pip installs (offline re-runs); WHEEL_BUILT=1 uses the wheel
#        already in dist/.
#
# The namespace tests are marked `needs_root`; this script selects them
# (`pytest --needs-root`), so without root they fail, never skip. A plain
# `pytest roce-net-py/tests` lists them as skipped ("needs root").
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n==> %s\n' "$*"; }
part=${1:-all}
PY=.venv/bin/python

if [ "$part" = all ] || [ "$part" = --build-part ]; then
  if [ ! -x "$PY" ]; then
    log "creating .venv"
    python3 -m venv .venv
  fi
  if [ "${SKIP_PIP:-0}" != 1 ]; then
    log "installing test tools into .venv"
    # ansible-core pinned to a minor release: its sanity rules change between
    # releases, and the collection is checked against 2.19's.
    "$PY" -m pip install -q --upgrade pytest pyyaml "ansible-core>=2.19,<2.20" mypy \
      prometheus-client pytest-mock pytest-xdist mock
  fi

  # The one wheel build: the portable wheel, which the tests then use
  # (WHEEL_BUILT=1: scripts/test.sh built it already).
  [ "${WHEEL_BUILT:-0}" = 1 ] || scripts/build-artifacts.sh wheel
  "$PY" -m pip install -q --force-reinstall --no-deps --no-index dist/roce_net-*.whl

  log "checking that _types.py and __init__.py's result-type block are what the schema generates (scripts/gen_python_types.py --check)"
  (cd /tmp && "$OLDPWD/$PY" "$OLDPWD/scripts/gen_python_types.py" --check)

  log "checking the hand-written stubs against the built module (stubtest)"
  # Run from /tmp so the installed wheel, not the source tree, is imported.
  (cd /tmp && "$OLDPWD/$PY" -m mypy.stubtest roce_net)

  log "type-checking the package as a user would see it (mypy --strict)"
  (cd /tmp && "$OLDPWD/$PY" -m mypy --strict -p roce_net)

  log "ansible-test sanity and units on the roce_net.roce collection (offline)"
  start=$SECONDS
  PY="$PWD/$PY" scripts/ansible-test.sh all
  echo "ansible-test took $((SECONDS - start)) s"
fi

if [ "$part" = all ] || [ "$part" = --root-part ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "scripts/test-python.sh: not root, so the needs_root (namespace) tests will fail" >&2
  elif [ "${ROCE_NET_TEST_PRIVATE_NETNS:-0}" != 1 ]; then
    # As scripts/test.sh: a private mount namespace with its own, empty /run/netns,
    # so the lab namespaces are seen by this run only and vanish with it.
    export ROCE_NET_TEST_PRIVATE_NETNS=1
    # shellcheck disable=SC2016 # $0 and $@ belong to the inner bash
    exec unshare --mount --propagation private -- bash -c \
      'mkdir -p /run/netns && mount -t tmpfs -o mode=0755 rnt-test-netns /run/netns && exec "$0" "$@"' \
      "$PWD/scripts/test-python.sh" --root-part
  fi

  log "pytest roce-net-py/tests (with the needs_root lab tests)"
  # -rA lists every test's outcome; the fleet playbook test prints its counts.
  # The root part writes no bytecode into the user's tree.
  PYTHONDONTWRITEBYTECODE=1 "$PY" -m pytest -q -rA roce-net-py/tests -p no:cacheprovider \
    --needs-root

  left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep '^rnt-py-' || true)
  if [ -n "$left" ]; then
    echo "python tests left lab namespaces behind: $left" >&2
    exit 1
  fi
  log "python and ansible tests passed"
fi
