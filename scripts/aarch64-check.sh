#!/usr/bin/env bash
# The library on aarch64, built and run on this x86-64 machine: its unit tests
# are built for aarch64-unknown-linux-gnu and linked by zig against glibc 2.17's
# stubs (as the shipped artifacts are, scripts/build-artifacts.sh), then run
# under qemu-user (`qemu-aarch64 -L SYSROOT`, no binfmt handler registered)
# with Debian's arm64 libc6 unpacked as the sysroot. What it guards: code that
# differs by architecture (`c_char` is unsigned there; the announcement
# socket's closer in sys/detach.rs takes the portable path, two raw forks,
# which no x86-64 test reaches), and every hand-written layout and parser the
# unit tests cover.
#
# Also lints the library for aarch64 (cargo clippy -D warnings), where a cast
# that is a no-op there (`c_char as u8`) is refused.
#
# Usage: scripts/aarch64-check.sh
# Needs: .venv with cargo-zigbuild and ziglang (scripts/build-artifacts.sh
# tools), qemu-aarch64 (Debian: apt-get install --no-install-recommends
# qemu-user), rustup (adds the aarch64 standard library if missing), curl, gpgv
# and Debian's archive keyring (to check the downloaded libc6); the first run
# downloads from deb.debian.org ($ROCE_NET_DEBIAN_MIRROR) and rustup's server.
#
# Tests left out, each for a reason of the emulator, not of the code:
#   apply::identity::tests::cookie_is_stable_within_a_namespace: qemu-user's
#     getsockopt does not know SO_NETNS_COOKIE (EINVAL)
#   the four tests of the real libibverbs: no arm64 libibverbs in the sysroot
#   sys::tests::close_elsewhere_returns_once_the_grandchild_let_go_of_the_rest:
#     it re-runs its own (aarch64) executable, which needs a binfmt handler; the
#     test it runs, sys::tests::grandchild_let_go_alone, is run here directly,
#     alone, as it would run it
# Netlink and namespace tests need root and are ignored as on x86-64; qemu-user
# translates only part of rtnetlink, so the lab tests do not run under it.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/as-user.sh
root=$PWD
log() { printf '\n==> %s\n' "$*"; }
die() {
  echo "scripts/aarch64-check.sh: $*" >&2
  exit 1
}

target=aarch64-unknown-linux-gnu
floor=2.17
mirror=${ROCE_NET_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${ROCE_NET_AARCH64_SUITE:-bookworm}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

command -v qemu-aarch64 >/dev/null ||
  die "qemu-aarch64 missing (Debian: apt-get install --no-install-recommends qemu-user)"
[ -x .venv/bin/cargo-zigbuild ] || die "no .venv/bin/cargo-zigbuild (run scripts/build-artifacts.sh tools first)"
for c in curl gpgv xz dpkg readelf rustup; do
  command -v "$c" >/dev/null || die "$c missing"
done
[ -r "$keyring" ] || die "$keyring missing (Debian: apt-get install debian-archive-keyring)"
export PATH="$root/.venv/bin:$PATH"

if ! rustup target list --installed | grep -qx "$target"; then
  log "rustup target add $target"
  rustup target add "$target"
fi

tdir=$(target_dir)
mkdir -p "$tdir"
sysroot=$tdir/aarch64-sysroot
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Debian's arm64 libc6 from $suite, checked as apt checks it: the release file
# signed by Debian's archive key, the package index's hash in it, the
# package's hash in the index.
fetch() { # URL FILE
  curl -fsS --retry 3 --max-time 300 -o "$2" "$1" || die "downloading $1 failed"
}
if [ ! -e "$sysroot/lib/ld-linux-aarch64.so.1" ]; then
  log "the aarch64 sysroot: Debian $suite's arm64 libc6 into $sysroot"
  fetch "$mirror/dists/$suite/InRelease" "$scratch/InRelease"
  # As apt judges it: one good signature by a key of the keyring is enough
  # (InRelease carries several; a keyring without the newest key still
  # verifies the others), a bad one is not.
  gpgv --status-fd 3 --keyring "$keyring" --output "$scratch/Release" "$scratch/InRelease" \
    3>"$scratch/gpgv.status" 2>"$scratch/gpgv.log" || true
  if ! grep -q '^\[GNUPG:\] VALIDSIG ' "$scratch/gpgv.status" ||
    grep -q '^\[GNUPG:\] BADSIG ' "$scratch/gpgv.status" || [ ! -s "$scratch/Release" ]; then
    die "$mirror/dists/$suite/InRelease: no good signature by a key of $keyring: $(cat "$scratch/gpgv.log")"
  fi
  index=main/binary-arm64/Packages.xz
  want=$(awk -v f="$index" '/^SHA256:/ {s = 1; next} /^[^ ]/ {s = 0} s && $3 == f {print $1}' "$scratch/Release")
  [ -n "$want" ] || die "the $suite release file lists no $index"
  # By its hash, so a mirror updated since InRelease was read still serves it.
  fetch "$mirror/dists/$suite/main/binary-arm64/by-hash/SHA256/$want" "$scratch/Packages.xz"
  echo "$want  $scratch/Packages.xz" | sha256sum -c --quiet - || die "$index: hash differs from the signed release file"
  file= sum=
  read -r file sum < <(xz -dc "$scratch/Packages.xz" | awk '
    /^Package: / {p = ($2 == "libc6")}
    p && /^Filename: / {f = $2}
    p && /^SHA256: / {s = $2}
    /^$/ && p && f != "" {print f, s; exit}') || true
  [ -n "${file:-}" ] && [ -n "${sum:-}" ] || die "no libc6 in $suite's arm64 index"
  fetch "$mirror/$file" "$scratch/libc6.deb"
  echo "$sum  $scratch/libc6.deb" | sha256sum -c --quiet - || die "$file: hash differs from the index"
  rm -rf "$sysroot.tmp"
  dpkg -x "$scratch/libc6.deb" "$sysroot.tmp"
  [ -e "$sysroot.tmp/lib/ld-linux-aarch64.so.1" ] || die "$file holds no /lib/ld-linux-aarch64.so.1"
  rm -rf "$sysroot"
  mv -T "$sysroot.tmp" "$sysroot"
  echo "unpacked $(basename "$file")"
fi

log "cargo clippy for $target (the library and its tests)"
cargo clippy -p roce-net --all-targets --features verbs --locked --target "$target" -- -D warnings

log "the library's unit tests for $target (cargo zigbuild, glibc $floor)"
bin=$(cargo-zigbuild test -p roce-net --features verbs --lib --no-run --locked \
  --target "$target.$floor" --message-format=json-render-diagnostics |
  python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["profile"]["test"] and m.get("executable"):
        print(m["executable"])
')
[ -n "$bin" ] && [ -x "$bin" ] || die "cargo zigbuild test built no test executable"
readelf -h "$bin" | grep -q 'Machine: *AArch64' || die "$bin is not an aarch64 executable"

# Runs the test executable under the emulator, as cargo would (in the
# package's directory); fails unless at least $1 tests passed and none failed.
run() { # MIN_PASSED ENV... -- TEST_ARGS...
  local min=$1 out
  shift
  local env=()
  while [ "$1" != -- ]; do
    env+=("$1")
    shift
  done
  shift
  out=$(cd roce-net && env "${env[@]}" timeout 900 qemu-aarch64 -L "$sysroot" "$bin" "$@" 2>&1) || {
    echo "$out" | tail -60
    die "the aarch64 tests failed under qemu-aarch64 (output above)"
  }
  local passed
  passed=$(echo "$out" | sed -n 's/^test result: ok\. \([0-9]*\) passed.*/\1/p' | tail -1)
  [ "${passed:-0}" -ge "$min" ] || {
    echo "$out" | tail -30
    die "only ${passed:-0} aarch64 tests passed (at least $min expected)"
  }
  echo "$out" | grep '^test result'
}

log "under qemu-aarch64: every unit test but those the emulator cannot run"
start=$(date +%s)
run 340 -- \
  --skip apply::identity::tests::cookie_is_stable_within_a_namespace \
  --skip kernel::verbs::lib::tests::the_installed_libibverbs_loads \
  --skip kernel::verbs::view::tests::the_real_library_gives_a_specific_answer \
  --skip probe::rdma::ibverbs::tests::the_real_backend_says_why_rdma_is_unavailable \
  --skip probe::rdma::status::tests::matches_the_real_library \
  --skip sys::tests::close_elsewhere_returns_once_the_grandchild_let_go_of_the_rest
log "under qemu-aarch64: the closer's check, alone in its process (as its wrapper test runs it)"
run 1 ROCE_NET_TEST_CLOSE_ELSEWHERE_ALONE=1 -- \
  --exact sys::tests::grandchild_let_go_alone --test-threads=1
echo "aarch64 unit tests under qemu-aarch64: $(($(date +%s) - start))s"
