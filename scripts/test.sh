#!/usr/bin/env bash
# Runs every test of roce-net: installs what the tests need on a fresh Debian
# machine, then formatting, lints, Rust unit/fixture/golden tests, the namespace
# lab tests (need root), the Python binding's pytest suite and the Ansible playbook.
#
# Usage: sudo scripts/test.sh            (from the repository root)
# Env:   SKIP_INSTALL=1 skips apt/pip installation; SKIP_PYTHON=1 skips Python/Ansible.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\n==> %s\n' "$*"; }

if [ "$(id -u)" != 0 ]; then
  echo "scripts/test.sh: the lab tests create network namespaces and need root (run with sudo)" >&2
  exit 1
fi

if [ "${SKIP_INSTALL:-0}" != 1 ]; then
  log "installing system packages"
  need=()
  command -v ip >/dev/null || need+=(iproute2)
  command -v arping >/dev/null || need+=(iputils-arping)
  command -v sysctl >/dev/null || need+=(procps)
  command -v ping >/dev/null || need+=(iputils-ping)
  command -v strings >/dev/null || need+=(binutils)
  python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
  if [ ${#need[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need[@]}"
  fi
  # promtool (Prometheus' own text-format parser and linter) judges `roce-net
  # metrics`. Only the binary is wanted: policy-rc.d keeps apt from starting
  # the server, and the unit the package enables for boot is disabled again.
  if ! command -v promtool >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends prometheus
    systemctl disable prometheus.service >/dev/null 2>&1 || rm -f /etc/systemd/system/multi-user.target.wants/prometheus.service
  fi
fi

# Run the suite in a private mount namespace with its own, empty /run/netns: the
# namespace names the tests create are visible only to this run, so a concurrent
# run, another user's lab or a namespace roce-net manages on this node is never
# seen, listed or removed here, and anything a failing run leaves behind goes
# away with the mount namespace when the run ends.
if [ "${ROCE_NET_TEST_PRIVATE_NETNS:-0}" != 1 ]; then
  export ROCE_NET_TEST_PRIVATE_NETNS=1
  exec unshare --mount --propagation private -- "$0" "$@"
fi
mkdir -p /run/netns
mount -t tmpfs -o mode=0755 rnt-test-netns /run/netns

# The suite must pass on a node where roce-net already ran (apply and persist
# write /etc/iproute2/rt_tables.d/roce-net.conf there, so `ip` prints table
# names) and must never depend on that file: for the whole run, this mount
# namespace sees a tmpfs copy of iproute2's configuration directory with such a
# file for tables 1001-1008 added (the real /etc is never written). The names
# are those of a real 8-NIC node, not of the labs' NICs.
for conf in /etc/iproute2 /usr/share/iproute2 /usr/lib/iproute2; do
  [ -d "$conf" ] || continue
  stage=$(mktemp -d)
  cp -a "$conf"/. "$stage"/
  mkdir -p "$stage/rt_tables.d"
  {
    echo "# Managed by roce-net: routing tables of its per-NIC source routing."
    for i in 0 1 2 3 4 5 6 7; do printf '%d\troce_ens%df0np0\n' $((1001 + i)) $((i + 1)); done
  } > "$stage/rt_tables.d/roce-net.conf"
  mount -t tmpfs -o mode=0755 rnt-test-iproute2 "$conf"
  cp -a "$stage"/. "$conf"/
  rm -rf "$stage"
  echo "==> $conf is a tmpfs copy for this run, with rt_tables.d/roce-net.conf naming tables 1001-1008"
  break
done

# Nothing in the suite may read or write the machine's /run/roce-net (every test
# gives its own --state-dir): if it exists it is covered here by an empty,
# read-only tmpfs; if it does not, the run fails should anything create it.
run_state=/run/roce-net
run_state_existed=0
if [ -e "$run_state" ]; then
  run_state_existed=1
  mount -t tmpfs -o ro,mode=0755 rnt-test-run-roce-net "$run_state"
fi

log "cargo fmt --check"
cargo fmt --all -- --check

log "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

log "cargo test (unit, fixture, golden and namespace lab tests)"
# Lab tests must fail, not skip, when they cannot run in CI.
export CI="${CI:-}"
# Lab tests are #[ignore = "needs root ..."], so plain `cargo test` lists them as
# ignored; here they run, and without root they would fail, not skip.
cargo test --workspace -- --test-threads=2 --include-ignored

if [ "${SKIP_PYTHON:-0}" != 1 ] && [ -x scripts/test-python.sh ]; then
  log "Python binding and Ansible modules"
  scripts/test-python.sh
fi

if [ "$run_state_existed" = 0 ] && [ -e "$run_state" ]; then
  echo "a test created $run_state (the machine's own state directory); tests must use --state-dir" >&2
  exit 1
fi

log "release build carries no test hooks"
# Fault injection lives behind #[cfg(test)] seams (DESIGN decision 13): the
# release binary and the Python extension must not contain any of the hooks the
# product once had, nor the test-only fault wrapper.
cargo build --release --bin roce-net -q
hooks='ROCE_NET_TEST_PAUSE_AFTER|pause_after|fail_at|_fail_at|injected failure|Faulty|test hook'
check_hooks() {
  if strings -a "$1" | grep -E "$hooks" >/dev/null; then
    echo "$1 contains test hooks:" >&2
    strings -a "$1" | grep -E "$hooks" | head -5 >&2
    exit 1
  fi
  echo "  $1: none"
}
check_hooks target/release/roce-net
so=$(ls .venv/lib/python3*/site-packages/roce_net/_roce_net*.so 2>/dev/null | head -1 || true)
if [ "${SKIP_PYTHON:-0}" != 1 ]; then
  [ -n "$so" ] || { echo "the built wheel's extension module was not found" >&2; exit 1; }
  check_hooks "$so"
fi

left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep '^rnt-' || true)
if [ -n "$left" ]; then
  echo "lab namespaces left behind: $left" >&2
  exit 1
fi
log "all tests passed"
