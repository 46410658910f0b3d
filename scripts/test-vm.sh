#!/usr/bin/env bash
# The VM tier (docs/vm.md): Debian guests under qemu with Soft-RoCE, the seed's
# failure reproduced on real RDMA, diagnosed, fixed on the node alone and proven
# with RDMA traffic; the views against the real tools on real sysfs.
#
# Usage: scripts/test-vm.sh            (as root; scripts/test.sh runs it last)
# Env:   CI=true: a VM test that cannot run fails (otherwise it is skipped, saying
#        what is missing). ROCE_NET_VM_BIN: the roce-net binary the guests run
#        (default: dist/'s portable CLI, the shipped `verbs` build).
#        ROCE_NET_VM_ACCEL=kvm|tcg overrides the accelerator detection.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "scripts/test-vm.sh: the VM tier needs root (a lab namespace with taps, debootstrap)" >&2
  exit 77
fi
scripts/vm/install-deps.sh
PY=.venv/bin/python
[ -x "$PY" ] || PY=python3
start=$SECONDS
status=0
PYTHONDONTWRITEBYTECODE=1 "$PY" -m pytest -q -rA -p no:cacheprovider tests/vm || status=$?
echo "VM tier: $((SECONDS - start)) s"
left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep '^rnt-vm-' || true)
if [ -n "$left" ]; then
  echo "the VM tier left lab namespaces behind: $left" >&2
  status=1
fi
exit $status
