#!/usr/bin/env bash
# Runs every test of roce-net: installs what the tests need on a fresh Debian
# machine, then formatting, lints, Rust unit/fixture/golden tests, the namespace
# lab tests (need root), the portable artifacts (scripts/build-artifacts.sh), the
# Python binding's pytest suite and the Ansible playbook.
#
# Usage: scripts/test.sh                 (from anywhere, as yourself or as root)
#
# It builds as you (cargo from your PATH or ~/.cargo/bin; run through sudo, as the
# user behind sudo) and runs only the tests as root: directly when you are root,
# through sudo when it is there, and otherwise it stops after the build and prints
# the one command to run as root (`scripts/test.sh --root-part`). Root never runs
# cargo or pip, so target/, .venv and ~/.cargo stay yours.
#
# Env:   SKIP_INSTALL=1 skips apt/pip installation; SKIP_PYTHON=1 skips Python/Ansible;
#        SKIP_VM=1 skips the VM tier (scripts/test-vm.sh); SKIP_AARCH64=1 skips
#        the aarch64 unit tests under qemu-user (scripts/aarch64-check.sh);
#        CI=true makes tests that cannot run fail (they always do without root).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/as-user.sh

log() { printf '\n==> %s\n' "$*"; }
self=$PWD/scripts/test.sh
part=${1:-all}
bins=$(target_dir)/test-binaries.tsv
# What the root part needs from the environment, passed through sudo.
ROOT_ENV="CI SKIP_PYTHON SKIP_INSTALL SKIP_VM ROCE_NET_TEST_TOOLS"
# Tools unpacked from Debian's packages rather than installed (nmcli,
# promtool; scripts/lib/unpack-tools.sh): root's cache, beside the VM images.
tools_dir() {
  echo "${ROCE_NET_TEST_TOOLS:-$(getent passwd root | cut -d: -f6)/.cache/roce-net/test-tools}"
}
export ROCE_NET_TEST_TOOLS
ROCE_NET_TEST_TOOLS=$(tools_dir)

case "$part" in
all)
  # System packages the tests use (apt needs root: directly, via sudo, or told).
  need=()
  command -v ip >/dev/null || need+=(iproute2)
  command -v arping >/dev/null || need+=(iputils-arping)
  command -v sysctl >/dev/null || need+=(procps)
  command -v ping >/dev/null || need+=(iputils-ping)
  command -v strings >/dev/null || need+=(binutils)
  # The lab tests compare the ethtool ioctl reader with `ethtool -S`.
  command -v ethtool >/dev/null || need+=(ethtool)
  # The CLI test of apply's announcements counts its packet sockets with strace.
  command -v strace >/dev/null || need+=(strace)
  command -v objdump >/dev/null || need+=(binutils)
  command -v dpkg-deb >/dev/null || need+=(dpkg)
  command -v gzip >/dev/null || need+=(gzip)
  python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
  # The real tools the persistence boot simulations feed roce-net's rendering to
  # (tests/it/persist_boot.rs: systemd-networkd, netplan generate, ifup/ifdown,
  # nmcli --offline and libnm through python3-gi). They only ever run inside lab
  # namespaces. Installed without recommends; a policy-rc.d that refuses every
  # start is put in place for the install when the machine has none, and the
  # unit ifupdown enables for the next boot is disabled again, so the
  # machine's own network is never handed to them. NetworkManager itself is
  # not installed (its daemon runs only in the VM guests, tests/vm): nmcli is
  # unpacked from its package (below), with libnm from gir1.2-nm-1.0.
  boot=()
  [ -x /lib/systemd/systemd-networkd ] || boot+=(systemd)
  command -v netplan >/dev/null || boot+=(netplan.io)
  command -v ifup >/dev/null || boot+=(ifupdown)
  /usr/bin/python3 -c 'import gi; gi.require_version("NM", "1.0"); from gi.repository import NM' \
    2>/dev/null || boot+=(python3-gi gir1.2-nm-1.0)
  # The Slurm tests (tests/it/slurm_health.rs, slurm_mesh.rs, and the mesh
  # playbook against the Slurm script in roce-net-py/tests/test_ansible_mesh.py)
  # run Debian's own slurmctld, slurmd and munged, only ever inside lab
  # namespaces with a configuration, key and state of their own
  # (scripts/lib/slurm-lab.sh): installed like the tools above, their services
  # disabled below (slurmstepd must sit where slurmd was built to find it, so
  # they cannot be unpacked).
  [ -x /usr/sbin/slurmd ] && [ -x /usr/sbin/slurmctld ] && [ -x /usr/bin/scontrol ] &&
    [ -x /usr/sbin/munged ] || boot+=(slurmctld slurmd slurm-client munge)
  # Tools unpacked, not installed: nmcli (network-manager's package would
  # bring the daemon and its units, and upgrade systemd and udev), promtool
  # (Prometheus' own text-format parser and linter, which judges `roce-net
  # metrics`; the prometheus package would add a user and a server unit) and
  # node_exporter.
  unpack=()
  command -v nmcli >/dev/null || [ -x "$ROCE_NET_TEST_TOOLS/bin/nmcli" ] ||
    unpack+=(network-manager:nmcli)
  command -v promtool >/dev/null || [ -x "$ROCE_NET_TEST_TOOLS/bin/promtool" ] ||
    unpack+=(prometheus:promtool)
  # node_exporter serves what the health timer writes (tests/it/health_metrics.rs),
  # in a lab namespace; the package would add a user and a server unit.
  command -v prometheus-node-exporter >/dev/null ||
    [ -x "$ROCE_NET_TEST_TOOLS/bin/prometheus-node-exporter" ] ||
    unpack+=(prometheus-node-exporter:prometheus-node-exporter)
  # The unpacked nmcli's one library that nothing above brings.
  ldconfig -p 2>/dev/null | grep -q 'libreadline\.so\.8 ' || need+=(libreadline8)
  # The `verbs` feature's tests: the real libibverbs (libibverbs1, pulled in by
  # -dev) answers ENOSYS here, and verbs.h checks the hand-written layouts (cc).
  [ -e /usr/include/infiniband/verbs.h ] || need+=(libibverbs-dev)
  command -v cc >/dev/null || need+=(gcc)
  # libfuzzer-sys compiles libFuzzer (C++) for the fuzz smoke run.
  command -v c++ >/dev/null || need+=(g++)
  # The library's unit tests built for aarch64 run under qemu-user
  # (scripts/aarch64-check.sh): installed without its recommended binfmt
  # handlers, so nothing on the machine starts foreign binaries by itself.
  command -v qemu-aarch64 >/dev/null || boot+=(qemu-user)
  command -v gpgv >/dev/null || need+=(gpgv)
  [ -r /usr/share/keyrings/debian-archive-keyring.gpg ] || need+=(debian-archive-keyring)
  command -v curl >/dev/null || need+=(curl)
  command -v xz >/dev/null || need+=(xz-utils)
  # strace's fault injection kills persist at each of its system calls
  # (tests/it/cli.rs, a_reboot_after_persist_is_killed_at_any_syscall_...).
  command -v strace >/dev/null || need+=(strace)
  if [ "${SKIP_INSTALL:-0}" != 1 ] &&
    { [ ${#need[@]} -gt 0 ] || [ ${#boot[@]} -gt 0 ] || [ ${#unpack[@]} -gt 0 ]; }; then
    what=()
    [ ${#need[@]} -gt 0 ] || [ ${#boot[@]} -gt 0 ] && what+=("installing system packages: ${need[*]} ${boot[*]}")
    [ ${#unpack[@]} -gt 0 ] && what+=("unpacking ${unpack[*]} into $ROCE_NET_TEST_TOOLS")
    log "$(IFS=';'; echo "${what[*]}" | sed 's/;/; /g')"
    script='export DEBIAN_FRONTEND=noninteractive
      if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf "%s\n" "#!/bin/sh" "exit 101" >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d; trap "rm -f /usr/sbin/policy-rc.d" EXIT
      fi
      apt-get update -qq'
    [ ${#need[@]} -gt 0 ] && script+="; apt-get install -y -qq ${need[*]}"
    if [ ${#boot[@]} -gt 0 ]; then
      script+="; apt-get install -y -qq --no-install-recommends ${boot[*]}"
      units=()
      [[ " ${boot[*]} " == *" ifupdown "* ]] && units+=(networking.service)
      [[ " ${boot[*]} " == *" systemd "* ]] &&
        units+=(systemd-networkd.service systemd-networkd.socket)
      [[ " ${boot[*]} " == *" slurmd "* ]] &&
        units+=(munge.service slurmctld.service slurmd.service)
      # systemctl disable works without a running systemd; where it cannot, the
      # links the packages made go by hand.
      links=("${units[@]/#//etc/systemd/system/*.wants/}")
      [ ${#units[@]} -gt 0 ] &&
        script+="; systemctl disable ${units[*]} >/dev/null 2>&1 || rm -f ${links[*]}"
    fi
    [ ${#unpack[@]} -gt 0 ] &&
      script+="; $PWD/scripts/lib/unpack-tools.sh $ROCE_NET_TEST_TOOLS ${unpack[*]}"
    if [ "$(id -u)" = 0 ]; then
      bash -c "set -e; $script"
    elif command -v sudo >/dev/null; then
      sudo bash -c "set -e; $script"
    else
      echo "scripts/test.sh: missing packages and no sudo; as root run:" >&2
      echo "    bash -c '$script'" >&2
      exit 77
    fi
  fi
  # The VM tier's guest images (docs/vm.md) are built from Debian's packages
  # while cargo builds: mostly downloading and unpacking, they overlap the
  # compile instead of following it. scripts/test-vm.sh waits for them (the
  # image script holds a lock per release) and reports a failed build.
  if [ "${SKIP_VM:-0}" != 1 ] && [ "$(id -u)" = 0 ]; then
    mkdir -p "$(target_dir)"
    vm_log=$(target_dir)/vm-images.log
    log "building the VM guest images in the background (log: $vm_log)"
    (scripts/vm/install-deps.sh && for r in bookworm bullseye trixie; do
      scripts/vm/image.sh "$r" || true
    done) >"$vm_log" 2>&1 &
  fi
  build_as_user "$self" --build-part
  ROOT_ENV=$ROOT_ENV run_as_root "$self" --root-part
  exit
  ;;

--build-part)
  # Everything that needs no root, as the building user.
  log "cargo fmt --check"
  cargo fmt --all -- --check
  # The Python binding is a workspace of its own (maturin builds it alone),
  # so --all does not reach it.
  cargo fmt --manifest-path roce-net-py/Cargo.toml -- --check

  # The CLI artifact (the shipped binary and the .deb) builds in the background
  # from here on: its fat-LTO link runs on one core for minutes, and beside the
  # lints, test builds and fuzz runs below that core is no longer idle (a cold
  # build part went from 882 s to 751 s on 2 cores, same CPU time). Its release
  # directories are not the ones the steps below build in, so cargo's locks
  # do not make them wait for each other; its output is shown when it is
  # waited for, before the artifacts are checked.
  scripts/build-artifacts.sh tools
  cli_log=$(mktemp)
  log "cli artifact: scripts/build-artifacts.sh cli deb, in the background"
  # Its own session and process group: cargo-zigbuild runs cargo, which runs
  # rustc, and all of them are stopped together (kill of the group) however
  # this part ends, so a failed lint does not leave a fat-LTO link running.
  SKIP_PIP=1 SUMS=0 setsid -w scripts/build-artifacts.sh cli deb >"$cli_log" 2>&1 &
  cli_pid=$!
  trap 'if [ -n "${cli_pid:-}" ]; then kill -TERM -- "-$cli_pid" 2>/dev/null; fi; rm -f "$cli_log"' EXIT

  log "cargo clippy"
  cargo clippy --workspace --all-targets -- -D warnings
  cargo clippy --workspace --all-targets --features verbs -- -D warnings
  # The Python binding, outside the workspace: in the workspace's target
  # directory, where the dependencies it shares are already checked (only
  # pyo3, pythonize, roce-net with the binding's features and the binding
  # itself are left: about 30 s of CPU; its own target directory would check
  # every dependency again).
  cargo clippy --manifest-path roce-net-py/Cargo.toml --target-dir "$(target_dir)" \
    --all-targets --locked -- -D warnings

  log "cargo test --no-run (building every test binary)"
  mkdir -p "$(dirname "$bins")"
  # One line per test binary: its path, the package directory cargo would run it
  # in, and its arguments, so the root part runs exactly what `cargo test` would.
  list_bins() { # ARGS_FOR_THE_BINARY -- CARGO_TEST_ARGS...
    local args=$1
    shift 2
    cargo test --no-run --locked --message-format=json-render-diagnostics "$@" |
      ARGS=$args python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["profile"]["test"] and m.get("executable"):
        print(m["executable"], os.path.dirname(m["manifest_path"]), os.environ["ARGS"], sep="\t")
'
  }
  {
    list_bins "--include-ignored" -- --workspace
    # The verbs feature: only what it adds (the library's verbs/rdma unit and lab
    # tests, the CLI's probe rdma tests); everything else runs above.
    list_bins "--include-ignored verbs rdma" -- -p roce-net --features verbs --lib
    # Its own target directory: the CLI binary these tests run (built with the
    # feature) would otherwise replace the one the tests above run. Its lab
    # tests (the CLI against hostile peers, through a stand-in libibverbs
    # compiled with cc against verbs.h) need root.
    list_bins "--include-ignored" -- -p roce-net-cli --features verbs --test cli_rdma \
      --target-dir "$(target_dir)/verbs"
  } >"$bins.tmp"
  mv "$bins.tmp" "$bins"
  echo "$(wc -l <"$bins") test binaries"

  # The fuzz targets (docs/fuzzing.md): their seeds and corpus run as the
  # library's unit tests in the root part; here they are built with libFuzzer's
  # instrumentation (stable toolchain, no cargo-fuzz needed) and each is fuzzed
  # for a few seconds. No root needed, so it runs as the building user.
  log "fuzz targets: build, ${FUZZ_SECS:-3}s each"
  fuzz_start=$(date +%s)
  scripts/fuzz.sh smoke "${FUZZ_SECS:-3}"
  echo "fuzz smoke run: $(( $(date +%s) - fuzz_start ))s"

  log "cargo test --doc"
  cargo test --workspace --doc --locked

  # The library on aarch64 (the portable half of code that differs by
  # architecture, e.g. the announcement socket's closer): its unit tests,
  # built with zig from .venv (scripts/build-artifacts.sh tools, above), run
  # under qemu-aarch64 with Debian's arm64 libc6 (about 2 minutes).
  if [ "${SKIP_AARCH64:-0}" != 1 ]; then
    log "aarch64: the library's unit tests under qemu-user (scripts/aarch64-check.sh)"
    scripts/aarch64-check.sh
  fi

  # The portable artifacts, checked (glibc 2.17 floor, auditwheel, installed and
  # run); the Python tests below use this wheel, built once. The CLI and .deb
  # come from the background build started above.
  if [ "${SKIP_PYTHON:-0}" != 1 ]; then
    SKIP_PIP=1 SUMS=0 scripts/build-artifacts.sh wheel
  fi
  log "cli artifact: waiting for the background build"
  status=0
  wait "$cli_pid" || status=$?
  cli_pid=
  cat "$cli_log"
  if [ "$status" != 0 ]; then
    echo "scripts/build-artifacts.sh cli deb failed (exit $status; its output is above)" >&2
    exit 1
  fi
  # Once both are written (each run above left SHA256SUMS alone).
  scripts/build-artifacts.sh sums

  # Fault injection lives behind #[cfg(test)] seams (docs/architecture.md, decision 13): the
  # shipped CLI binary and the wheel's extension module must not contain any of
  # the hooks the product once had, nor the test-only fault wrapper.
  log "the release artifacts carry no test hooks"
  hooks='ROCE_NET_TEST_PAUSE_AFTER|pause_after|fail_at|_fail_at|injected failure|Faulty|test hook'
  check_hooks() { # FILE [LABEL]
    [ -s "$1" ] || { echo "${2:-$1}: no such artifact to check for test hooks" >&2; exit 1; }
    if strings -a "$1" | grep -E "$hooks" >/dev/null; then
      echo "${2:-$1} contains test hooks:" >&2
      strings -a "$1" | grep -E "$hooks" | head -5 >&2
      exit 1
    fi
    echo "  ${2:-$1}: none"
  }
  for cli in dist/roce-net-*-x86_64-linux-gnu; do check_hooks "$cli"; done
  if [ "${SKIP_PYTHON:-0}" != 1 ]; then
    for whl in dist/roce_net-*.whl; do
      so=$(mktemp)
      python3 - "$whl" "$so" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = [n for n in z.namelist() if n.endswith(".so")]
if not names:
    sys.exit(f"{sys.argv[1]}: no extension module")
open(sys.argv[2], "wb").write(z.read(names[0]))
PY
      check_hooks "$so" "$whl (extension module)"
      rm -f "$so"
    done
  fi

  if [ "${SKIP_PYTHON:-0}" != 1 ] && [ -x scripts/test-python.sh ]; then
    WHEEL_BUILT=1 scripts/test-python.sh --build-part
  fi
  exit
  ;;

--root-part) ;;

*)
  echo "usage: scripts/test.sh [--build-part | --root-part]" >&2
  exit 64
  ;;
esac

# The root part: the tests themselves.
if [ "$(id -u)" != 0 ]; then
  echo "scripts/test.sh --root-part: the lab tests create network namespaces and need root" >&2
  exit 77
fi
if [ ! -s "$bins" ]; then
  echo "scripts/test.sh --root-part: no $bins: run scripts/test.sh (the build part) first" >&2
  exit 1
fi

# Run the suite in a private mount namespace with its own, empty /run/netns: the
# namespace names the tests create are visible only to this run, so a concurrent
# run, another user's lab or a namespace roce-net manages on this node is never
# seen, listed or removed here, and anything a failing run leaves behind goes
# away with the mount namespace when the run ends.
if [ "${ROCE_NET_TEST_PRIVATE_NETNS:-0}" != 1 ]; then
  export ROCE_NET_TEST_PRIVATE_NETNS=1
  exec unshare --mount --propagation private -- "$self" "$@"
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

# The tools unpacked rather than installed (nmcli, promtool) come first on PATH.
if [ -d "$ROCE_NET_TEST_TOOLS/bin" ]; then
  export PATH="$ROCE_NET_TEST_TOOLS/bin:$PATH"
fi

log "Rust tests (unit, fixture, golden and namespace lab tests; the verbs feature's)"
# Lab tests must fail, not skip, when they cannot run in CI.
export CI="${CI:-}"
# Lab tests are #[ignore = "needs root ..."], so plain `cargo test` lists them as
# ignored; here they run, and without root they would fail, not skip.
passed=0 failed=0 failing=()
while IFS=$'\t' read -r exe dir args; do
  out=$(mktemp)
  echo "     Running $exe $args"
  # cargo runs a test binary in its package's directory; so does this.
  # shellcheck disable=SC2086 # $args is a list of words
  if (cd "$dir" && "$exe" --test-threads=2 $args) 2>&1 | tee "$out"; then :; else
    failing+=("$exe")
  fi
  p=0 f=0
  read -r p f < <(sed -n 's/^test result: [A-Za-z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p' "$out" | tail -1) || true
  passed=$((passed + ${p:-0})) failed=$((failed + ${f:-0}))
  rm -f "$out"
done <"$bins"
echo "rust tests: $passed passed, $failed failed"
if [ ${#failing[@]} -gt 0 ]; then
  printf 'failing test binary: %s\n' "${failing[@]}" >&2
  exit 1
fi

if [ "${SKIP_PYTHON:-0}" != 1 ] && [ -x scripts/test-python.sh ]; then
  log "Python binding and Ansible modules"
  scripts/test-python.sh --root-part
fi

# The VM tier (docs/vm.md): Debian guests under qemu with Soft-RoCE, booted
# once and reused by every scenario; the guests run the portable CLI built above.
if [ "${SKIP_VM:-0}" != 1 ]; then
  log "VM tier: the seed on real RDMA (scripts/test-vm.sh)"
  scripts/test-vm.sh
fi

if [ "$run_state_existed" = 0 ] && [ -e "$run_state" ]; then
  echo "a test created $run_state (the machine's own state directory); tests must use --state-dir" >&2
  exit 1
fi

left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep '^rnt-' || true)
if [ -n "$left" ]; then
  echo "lab namespaces left behind: $left" >&2
  exit 1
fi
log "all tests passed"
