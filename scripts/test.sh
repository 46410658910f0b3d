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
  if [ ${#need[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${need[@]}"
  fi
fi

log "leftover lab namespaces from an earlier run"
for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^rnt-' || true); do
  echo "removing stale $ns"; ip netns del "$ns" || true
done

log "cargo fmt --check"
cargo fmt --all -- --check

log "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings

log "cargo test (unit, fixture, golden and namespace lab tests)"
# Lab tests must fail, not skip, when they cannot run in CI.
export CI="${CI:-}"
cargo test --workspace -- --test-threads=2

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
