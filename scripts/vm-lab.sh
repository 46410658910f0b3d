#!/usr/bin/env bash
# The seed on real RDMA, in virtual machines (docs/vm.md): boots a Debian 12
# node with four NICs and a peer with one (Soft-RoCE on every NIC), shows ping
# working and RDMA failing, the doctor's findings, applies the fix on the node
# alone and shows every RDMA pair passing. Nothing outside its own lab
# namespace (rnt-vm-*) and its image cache (~/.cache/roce-net/vm) is touched.
#
# Usage: scripts/vm-lab.sh [--keep | --remove DIR]
# Needs: root for the guests (it builds as you and runs the rest through sudo);
# about 2.5 GB of disk for the image; 5-10 minutes with TCG on 2 cores the first
# time (the image is built once and cached), about half that later.
set -euo pipefail
# --remove DIR is where you ran this from: made absolute, its links resolved,
# before the script moves to the repository.
if [ "${1:-}" = --remove ] && [ $# -ge 2 ]; then
  dir=$(realpath -e -- "$2") || {
    echo "scripts/vm-lab.sh --remove: no such directory: $2" >&2
    exit 66
  }
  set -- --remove "$dir" "${@:3}"
fi
cd "$(dirname "$0")/.."
. scripts/lib/as-user.sh
if [ "${1:-}" != --remove ] && [ -z "${ROCE_NET_VM_BIN:-}" ] && ! ls dist/roce-net-*-x86_64-linux-gnu >/dev/null 2>&1; then
  # The build scripts/lab.sh made serves here as it is (the same command):
  # cargo then only checks that it is up to date.
  echo "==> roce-net with the verbs feature, the build scripts/lab.sh uses (the guests run it; built now unless it is there)"
  build_as_user cargo build --release --locked --features verbs --bin roce-net
  export ROCE_NET_VM_BIN=$(target_dir)/release/roce-net
fi
ROOT_ENV="ROCE_NET_VM_BIN ROCE_NET_VM_ACCEL ROCE_NET_VM_CACHE" run_as_root bash -c 'scripts/vm/install-deps.sh && exec python3 scripts/vm/demo.py "$@"' vm-lab "$@"
