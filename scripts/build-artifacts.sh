#!/usr/bin/env bash
# Builds roce-net's portable artifacts into dist/ and checks each one:
#
#   dist/roce_net-<v>-cp38-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
#                       the Python package (abi3: CPython >= 3.8), glibc >= 2.17
#   dist/roce-net-<v>-x86_64-linux-gnu       the CLI binary, glibc >= 2.17
#   dist/roce-net_<v>_amd64.deb              the CLI as a Debian package (/usr/bin/roce-net),
#                       with the health check's systemd service and timer, the Slurm
#                       HealthCheckProgram, the NHC check and the node-problem-detector
#                       config (packaging/, docs/health.md)
#   dist/SHA256SUMS
#
# glibc 2.17 is manylinux2014's floor (RHEL/CentOS 7); every distribution a GPU
# node runs today (RHEL 8/9, Ubuntu 20.04+, Debian 11+, SLES 15) has a newer glibc.
# The builds link against zig's glibc 2.17 stubs (`maturin --zig`, `cargo
# zigbuild`, with zig from PyPI's `ziglang`), so the result cannot use newer
# symbols whatever glibc the build machine has. Checks: `auditwheel show` on the
# wheel, the highest GLIBC_x.y symbol version of the binary and of the wheel's .so
# (objdump -T), the wheel imported in a fresh venv, the binary and the .deb's
# binary run, the .deb installed with dpkg into a scratch root.
#
# Usage: scripts/build-artifacts.sh [wheel] [cli] [deb]   (default: all three)
#        scripts/build-artifacts.sh tools   only the build tools in .venv (so that
#        two invocations can then run side by side with SKIP_PIP=1 SUMS=0)
#        scripts/build-artifacts.sh sums    only dist/SHA256SUMS, of what is there
#        Runs as any user (no root needed), from anywhere.
# Env:   SUMS=0 leaves SHA256SUMS alone (see `sums`);
#        PYTHON=python3 for the venv (.venv, created when missing); SKIP_PIP=1 skips
#        pip installs (offline re-runs); DIST=dir instead of dist/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

log() { printf '\n==> %s\n' "$*"; }
die() { echo "build-artifacts.sh: $*" >&2; exit 1; }

GLIBC_FLOOR=2.17
DIST=${DIST:-$root/dist}
what=("$@")
[ ${#what[@]} -gt 0 ] || what=(wheel cli deb)
want() { local w; for w in "${what[@]}"; do [ "$w" = "$1" ] && return 0; done; return 1; }

# SHA256SUMS of every artifact in $DIST (the wheel, the binary, the .deb),
# written whole under a temporary name and renamed. SUMS=0 leaves it to a later
# `scripts/build-artifacts.sh sums` (scripts/test.sh runs two of these scripts
# side by side, and one must not hash a file the other is still writing).
write_sums() {
  (
    cd "$DIST"
    shopt -s nullglob
    files=(roce_net-*.whl roce-net-*-x86_64-linux-gnu roce-net_*.deb)
    if [ ${#files[@]} -gt 0 ]; then
      sha256sum -- "${files[@]}" >SHA256SUMS.tmp
      mv SHA256SUMS.tmp SHA256SUMS
    fi
  )
}
if [ "${what[*]}" = sums ]; then
  write_sums
  cat "$DIST/SHA256SUMS"
  exit 0
fi

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
[ -n "$version" ] || die "cannot read the workspace version from Cargo.toml"
command -v cargo >/dev/null || die "no cargo in PATH (install Rust with rustup, then open a new shell)"
command -v objdump >/dev/null || die "objdump missing (Debian: apt-get install binutils)"

if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  "${PYTHON:-python3}" -m venv .venv
fi
PY=$root/.venv/bin/python
if [ "${SKIP_PIP:-0}" != 1 ]; then
  log "installing the build tools into .venv (maturin, ziglang, cargo-zigbuild, auditwheel)"
  "$PY" -m pip install -q --upgrade 'maturin>=1.5,<2' ziglang cargo-zigbuild auditwheel
fi
[ "${what[*]}" = tools ] && exit 0
# maturin and cargo-zigbuild find zig as `python -m ziglang` of the venv's python.
export PATH="$root/.venv/bin:$PATH"
mkdir -p "$DIST"

# The highest GLIBC_x.y version among a file's dynamic symbols; fails when it is
# above the floor.
check_glibc() {
  local f=$1 max
  max=$(objdump -T "$f" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
  [ -n "$max" ] || die "$f: no GLIBC symbol versions found (not a dynamic glibc binary?)"
  if [ "$(printf '%s\n%s\n' "$max" "$GLIBC_FLOOR" | sort -V | tail -1)" != "$GLIBC_FLOOR" ]; then
    die "$f needs GLIBC_$max, above the floor $GLIBC_FLOOR"
  fi
  # A libc function the floor's glibc lacks links as an *unversioned* undefined
  # symbol (zig's glibc 2.17 stubs do not define it): the version check above
  # cannot see it, and the file would fail to load on an old node. Only weak
  # references and, in the extension module, CPython's C API may be unversioned.
  local unversioned
  unversioned=$(objdump -T "$f" | awk '$0 ~ /\*UND\*/ && $0 !~ /GLIBC_/ && $2 != "w" {print $NF}' |
    grep -Ev '^_?Py' || true)
  if [ -n "$unversioned" ]; then
    die "$f: undefined symbols without a glibc version (not in glibc $GLIBC_FLOOR?): $(echo $unversioned)"
  fi
  echo "$f: highest glibc symbol version GLIBC_$max (floor $GLIBC_FLOOR), no unversioned libc symbols"
}

# Temporary directories removed, and a background build stopped, however the
# script ends.
scratch=()
cli_pid=
cleanup() {
  if [ -n "$cli_pid" ]; then
    pkill -TERM -P "$cli_pid" 2>/dev/null || true
    kill "$cli_pid" 2>/dev/null || true
  fi
  [ ${#scratch[@]} -eq 0 ] || rm -rf "${scratch[@]}"
}
trap cleanup EXIT

# The CLI as it ships: with `verbs`, no debug info (the dev profile keeps line
# tables for backtraces), against glibc 2.17's symbols.
build_cli() {
  CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=debuginfo \
    cargo zigbuild --release --locked --features verbs --bin roce-net \
    --target "x86_64-unknown-linux-gnu.$GLIBC_FLOOR"
}
if { want cli || want deb; } && want wheel; then
  # The CLI's fat-LTO link spends minutes on one core: build it beside the wheel
  # (separate target directories) and show its output after the wheel's.
  cli_log=$(mktemp)
  scratch+=("$cli_log")
  log "cli: cargo zigbuild --target x86_64-unknown-linux-gnu.$GLIBC_FLOOR (beside the wheel)"
  build_cli >"$cli_log" 2>&1 &
  cli_pid=$!
fi

if want wheel; then
  log "wheel: maturin --zig --compatibility manylinux2014 (abi3)"
  rm -f "$DIST"/roce_net-*.whl
  (cd roce-net-py && "$PY" -m maturin build --release --zig --compatibility manylinux2014 \
    -i "$PY" -o "$DIST")
  whl=$(ls "$DIST"/roce_net-*.whl)
  case "$whl" in
    *-cp38-abi3-*manylinux_2_17_x86_64*) ;;
    *) die "$whl: expected a cp38-abi3 manylinux_2_17 wheel" ;;
  esac
  log "wheel: auditwheel show"
  audit=$("$PY" -m auditwheel show "$whl")
  echo "$audit"
  # auditwheel names the most compatible policy the wheel's symbols allow.
  # (It wraps its lines, so they are joined first.)
  tr '\n' ' ' <<<"$audit" | grep -q 'consistent with the following platform tag: *"manylinux_2_17_x86_64"' \
    || die "auditwheel does not find $whl consistent with manylinux_2_17_x86_64"
  tmp=$(mktemp -d)
  scratch+=("$tmp")
  "$PY" -m zipfile -e "$whl" "$tmp/whl"
  check_glibc "$(ls "$tmp"/whl/roce_net/_roce_net*.so)"
  log "wheel: installed into a fresh venv and imported"
  "${PYTHON:-python3}" -m venv "$tmp/venv"
  "$tmp/venv/bin/python" -m pip install -q --no-index --no-deps "$whl"
  (cd "$tmp" && "$tmp/venv/bin/python" -c '
import roce_net, sys
st = roce_net.parse_snapshot(open(sys.argv[1]).read())
print("roce_net", roce_net.__version__, "from", roce_net.__file__)
print("doctor on a fixture:", len(roce_net.doctor(st)), "findings")
' "$root/roce-net/tests/fixtures/doctor/healthy.json")
fi

bin="$DIST/roce-net-$version-x86_64-linux-gnu"
if want cli || want deb; then
  if [ -n "$cli_pid" ]; then
    log "cli: the build beside the wheel"
    status=0
    wait "$cli_pid" || status=$?
    cli_pid=
    cat "$cli_log"
    [ "$status" = 0 ] || die "building the CLI failed (exit $status; its output is above)"
  else
    log "cli: cargo zigbuild --target x86_64-unknown-linux-gnu.$GLIBC_FLOOR"
    build_cli
  fi
  tdir=${CARGO_TARGET_DIR:-target}
  install -m 0755 "$tdir/x86_64-unknown-linux-gnu/release/roce-net" "$bin"
  check_glibc "$bin"
  "$bin" --version
  "$bin" --json doctor --from roce-net/tests/fixtures/doctor/healthy.json >/dev/null \
    || die "$bin: doctor on a fixture failed"
fi

if want deb; then
  log "deb: dpkg-deb --build"
  command -v dpkg-deb >/dev/null || die "dpkg-deb missing (Debian: apt-get install dpkg)"
  pkg=$(mktemp -d)
  scratch+=("$pkg")
  install -D -m 0755 "$bin" "$pkg/usr/bin/roce-net"
  install -D -m 0644 README.md "$pkg/usr/share/doc/roce-net/README.md"
  install -D -m 0644 docs/cli.md "$pkg/usr/share/doc/roce-net/cli.md"
  install -D -m 0644 docs/health.md "$pkg/usr/share/doc/roce-net/health.md"
  # The health check where clusters look (docs/health.md): the units are
  # installed, not enabled (`systemctl enable --now roce-net-health.timer`).
  install -D -m 0644 packaging/systemd/roce-net-health.service \
    "$pkg/lib/systemd/system/roce-net-health.service"
  install -D -m 0644 packaging/systemd/roce-net-health.timer \
    "$pkg/lib/systemd/system/roce-net-health.timer"
  install -D -m 0755 packaging/slurm/roce-net-slurm-health \
    "$pkg/usr/lib/roce-net/roce-net-slurm-health"
  install -D -m 0755 packaging/slurm/roce-net-slurm-mesh \
    "$pkg/usr/lib/roce-net/roce-net-slurm-mesh"
  install -D -m 0644 packaging/nhc/roce_net.nhc "$pkg/usr/share/roce-net/nhc/roce_net.nhc"
  install -D -m 0644 packaging/node-problem-detector/roce-net-monitor.json \
    "$pkg/usr/share/roce-net/node-problem-detector/roce-net-monitor.json"
  install -D -m 0644 packaging/default/roce-net "$pkg/etc/default/roce-net"
  printf '%s\n' \
    'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' \
    'Upstream-Name: roce-net' '' 'Files: *' 'License: Apache-2.0' \
    > "$pkg/usr/share/doc/roce-net/copyright"
  mkdir -p "$pkg/DEBIAN"
  echo /etc/default/roce-net >"$pkg/DEBIAN/conffiles"
  cat > "$pkg/DEBIAN/control" <<EOF
Package: roce-net
Version: $version
Architecture: amd64
Maintainer: roce-net maintainers <roce-net@localhost>
Depends: libc6 (>= $GLIBC_FLOOR)
Section: net
Priority: optional
Installed-Size: $(du -sk "$pkg/usr" | cut -f1)
Description: diagnose and fix host networking on multi-NIC RoCE/RDMA servers
 roce-net finds and fixes ARP flux, asymmetric routing, strict rp_filter,
 polluted neighbour tables, wrong GID indexes and MTU mismatches on GPU
 nodes with several RDMA NICs in one subnet, as a transaction that rolls
 back on failure.
EOF
  deb="$DIST/roce-net_${version}_amd64.deb"
  rm -f "$deb"
  dpkg-deb --root-owner-group --build "$pkg" "$deb" >/dev/null
  dpkg-deb --info "$deb" | sed -n '/Package:/,/Depends:/p'
  log "deb: installed with dpkg into a scratch root and run"
  inst="$pkg/root"
  mkdir -p "$inst/var/lib/dpkg/info" "$inst/var/lib/dpkg/updates"
  touch "$inst/var/lib/dpkg/status"
  # --force-depends: the scratch root has no libc6 package; the host's glibc runs it.
  dpkg --force-not-root --force-depends --root="$inst" --log=/dev/null -i "$deb" >/dev/null
  "$inst/usr/bin/roce-net" --version
  dpkg --root="$inst" -s roce-net | grep -q '^Status: install ok installed' \
    || die "dpkg does not list roce-net as installed in the scratch root"
  for f in lib/systemd/system/roce-net-health.service lib/systemd/system/roce-net-health.timer \
    usr/lib/roce-net/roce-net-slurm-health usr/lib/roce-net/roce-net-slurm-mesh \
    usr/share/roce-net/nhc/roce_net.nhc \
    usr/share/roce-net/node-problem-detector/roce-net-monitor.json etc/default/roce-net; do
    [ -s "$inst/$f" ] || die "the .deb did not install /$f"
  done
  # The units as installed, judged by systemd itself against the installed
  # binary (the scratch root gets the machine's targets they name).
  if command -v systemd-analyze >/dev/null && [ -d /lib/systemd/system ]; then
    cp -a /lib/systemd/system/*.target "$inst/lib/systemd/system/"
    out=$(systemd-analyze verify --root="$inst" roce-net-health.service roce-net-health.timer 2>&1) ||
      die "systemd-analyze verify of the .deb's units failed: $out"
    [ -z "$out" ] || die "systemd-analyze verify of the .deb's units: $out"
    echo "the .deb's units pass systemd-analyze verify ($(systemd-analyze --version | head -1))"
  else
    echo "no systemd-analyze here: the .deb's units were not verified (scripts/test.sh's tests verify them)"
  fi
fi

if [ "${SUMS:-1}" != 0 ]; then
  write_sums
fi
log "artifacts in $DIST"
ls -l "$DIST"
