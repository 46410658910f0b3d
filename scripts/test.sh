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
  python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
  # The `verbs` feature's tests: the real libibverbs (libibverbs1, pulled in by
  # -dev) answers ENOSYS here, and verbs.h checks the hand-written layouts (cc).
  [ -e /usr/include/infiniband/verbs.h ] || need+=(libibverbs-dev)
  command -v cc >/dev/null || need+=(gcc)
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

log "cargo fmt --check"
cargo fmt --all -- --check

log "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy --workspace --all-targets --features verbs -- -D warnings

log "cargo test (unit, fixture, golden and namespace lab tests)"
# Lab tests must fail, not skip, when they cannot run in CI.
export CI="${CI:-}"
# Lab tests are #[ignore = "needs root ..."], so plain `cargo test` lists them as
# ignored; here they run, and without root they would fail, not skip.
cargo test --workspace -- --test-threads=2 --include-ignored

log "cargo test --features verbs (libibverbs at run time, probe rdma, its lab tests)"
# Only what the feature adds: the library's verbs/rdma unit and lab tests and the
# CLI's probe rdma tests; everything else ran above.
cargo test -p roce-net --features verbs --lib -- --test-threads=2 --include-ignored verbs rdma
cargo test -p roce-net-cli --features verbs --test cli_rdma -- --test-threads=2

# The fuzz targets (docs/fuzzing.md): their seeds and corpus already ran as unit
# tests above; here they are built with libFuzzer's instrumentation (stable
# toolchain, no cargo-fuzz needed) and each is fuzzed for a few seconds.
log "fuzz targets: build, ${FUZZ_SECS:-3}s each"
fuzz_start=$(date +%s)
scripts/fuzz.sh smoke "${FUZZ_SECS:-3}"
echo "fuzz smoke run: $(( $(date +%s) - fuzz_start ))s"

if [ "${SKIP_PYTHON:-0}" != 1 ] && [ -x scripts/test-python.sh ]; then
  log "Python binding and Ansible modules"
  scripts/test-python.sh
fi

left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep '^rnt-' || true)
if [ -n "$left" ]; then
  echo "lab namespaces left behind: $left" >&2
  exit 1
fi
log "all tests passed"
