#!/usr/bin/env bash
# Tests the Python binding as users get it: the portable wheel that
# scripts/build-artifacts.sh builds (abi3, manylinux2014 / glibc 2.17, checked
# there with auditwheel), installed into .venv; then the stubs (stubtest, mypy
# --strict) and pytest on the installed wheel (API, errors, frozen types, GIL
# release, asyncio, stubs, namespace labs) and the Ansible modules against a lab
# namespace.
#
# Usage: scripts/test-python.sh [--build-part | --root-part]   (default: both)
#        --build-part: venv, tools, wheel, stub checks; needs no root (scripts/test.sh
#        runs it as the building user). --root-part: pytest; the namespace tests
#        need root. Both: what `scripts/test.sh` does, in one go.
# Env:   CI=true makes tests that cannot run (no root, no namespaces) fail, not skip.
#        SKIP_PIP=1 skips pip installs (offline re-runs); WHEEL_BUILT=1 uses the wheel
#        already in dist/.
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
    "$PY" -m pip install -q --upgrade pytest pyyaml ansible-core mypy
  fi

  # The one wheel build: the portable wheel, which the tests then use
  # (WHEEL_BUILT=1: scripts/test.sh built it already).
  [ "${WHEEL_BUILT:-0}" = 1 ] || scripts/build-artifacts.sh wheel
  "$PY" -m pip install -q --force-reinstall --no-deps --no-index dist/roce_net-*.whl

  log "checking the hand-written stubs against the built module (stubtest)"
  # Run from /tmp so the installed wheel, not the source tree, is imported.
  (cd /tmp && "$OLDPWD/$PY" -m mypy.stubtest roce_net)

  log "type-checking the package as a user would see it (mypy --strict)"
  (cd /tmp && "$OLDPWD/$PY" -m mypy --strict -p roce_net)
fi

if [ "$part" = all ] || [ "$part" = --root-part ]; then
  log "pytest roce-net-py/tests"
  # The root part writes no bytecode into the user's tree.
  PYTHONDONTWRITEBYTECODE=1 "$PY" -m pytest -q roce-net-py/tests -p no:cacheprovider

  left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep '^rnt-py-' || true)
  if [ -n "$left" ]; then
    echo "python tests left lab namespaces behind: $left" >&2
    exit 1
  fi
  log "python and ansible tests passed"
fi
