#!/usr/bin/env bash
# Builds the roce_net wheel and tests it: pytest on the installed wheel (API,
# errors, frozen types, GIL release, asyncio, stubs, namespace labs) and the
# Ansible collection against lab namespaces (one host and a fleet), then
# ansible-test sanity and units on the collection.
#
# Usage: sudo scripts/test-python.sh       (from anywhere)
# Env:   SKIP_PIP=1 skips pip installs (offline re-runs).
#
# The namespace tests are marked `needs_root`; this script selects them
# (`pytest --needs-root`), so without root they fail, never skip. A plain
# `pytest roce-net-py/tests` lists them as skipped ("needs root").
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n==> %s\n' "$*"; }

if [ "$(id -u)" != 0 ]; then
  echo "scripts/test-python.sh: not root, so the needs_root (namespace) tests will fail" >&2
elif [ "${ROCE_NET_TEST_PRIVATE_NETNS:-0}" != 1 ]; then
  # As scripts/test.sh: a private mount namespace with its own, empty /run/netns,
  # so the lab namespaces are seen by this run only and vanish with it.
  export ROCE_NET_TEST_PRIVATE_NETNS=1
  exec unshare --mount --propagation private -- bash -c \
    'mkdir -p /run/netns && mount -t tmpfs -o mode=0755 rnt-test-netns /run/netns && exec "$0" "$@"' \
    "$PWD/scripts/test-python.sh" "$@"
fi

if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  python3 -m venv .venv
fi
PY=.venv/bin/python

if [ "${SKIP_PIP:-0}" != 1 ]; then
  log "installing build and test tools into .venv"
  # ansible-core pinned to a minor release: its sanity rules change between
  # releases, and the collection is checked against 2.19's.
  "$PY" -m pip install -q --upgrade maturin pytest pyyaml "ansible-core>=2.19,<2.20" mypy \
    prometheus-client pytest-mock pytest-xdist mock
fi

log "building the wheel (maturin, abi3)"
rm -f target/wheels/roce_net-*.whl
"$PY" -m maturin build --release -m roce-net-py/Cargo.toml -o target/wheels
"$PY" -m pip install -q --force-reinstall --no-deps target/wheels/roce_net-*.whl

log "checking the hand-written stubs against the built module (stubtest)"
# Run from /tmp so the installed wheel, not the source tree, is imported.
(cd /tmp && "$OLDPWD/$PY" -m mypy.stubtest roce_net)

log "type-checking the package as a user would see it (mypy --strict)"
(cd /tmp && "$OLDPWD/$PY" -m mypy --strict -p roce_net)

log "pytest roce-net-py/tests (with the needs_root lab tests)"
# -rA lists every test's outcome; the fleet playbook test prints its counts.
"$PY" -m pytest -q -rA roce-net-py/tests -p no:cacheprovider --needs-root

log "ansible-test sanity and units on the roce_net.roce collection (offline)"
start=$SECONDS
PY="$PWD/$PY" scripts/ansible-test.sh all
echo "ansible-test took $((SECONDS - start)) s"

left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep '^rnt-py-' || true)
if [ -n "$left" ]; then
  echo "python tests left lab namespaces behind: $left" >&2
  exit 1
fi
log "python and ansible tests passed"
