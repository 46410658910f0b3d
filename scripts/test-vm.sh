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
# Two lanes run side by side, each its own pytest with its own guests (beds
# are per process: namespace rnt-vm-<pid>-<n>, temp dir, taps): the stacks
# module (one guest rebooting at a time, about half the tier) with the short
# Debian 11 module after it, and everything else. Under TCG a busy guest keeps
# one host core busy, and most of the time each lane has one busy guest, so on
# 2 cores the lanes take about as long together as the longer one alone. Each
# lane's lines carry its name. The Slurm mesh runs first in its lane: the
# seed's guests (a session fixture) stay up until the lane's end once booted.
stacks=(test_stacks.py test_debian11.py)
lanes=("stacks:$(printf 'tests/vm/%s ' "${stacks[@]}")"
  "others:tests/vm/test_slurm_mesh.py $(cd tests/vm && ls test_*.py |
    grep -vxF "$(printf '%s\n' "${stacks[@]}" test_slurm_mesh.py)" | sed 's|^|tests/vm/|' | tr '\n' ' ')")
pids=() names=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done' TERM INT HUP
for lane in "${lanes[@]}"; do
  name=${lane%%:*}
  # shellcheck disable=SC2086 # the lane's files are a list of words
  PYTHONDONTWRITEBYTECODE=1 "$PY" -m pytest -q -rA --durations=0 --durations-min=10 \
    -p no:cacheprovider ${lane#*:} > >(sed -u "s/^/[$name] /") 2>&1 &
  pids+=($!) names+=("$name")
done
status=0
for i in "${!pids[@]}"; do
  rc=0
  wait "${pids[$i]}" || rc=$?
  echo "VM tier lane ${names[$i]}: exit $rc after $((SECONDS - start)) s"
  [ "$rc" = 0 ] || status=1
done
echo "VM tier: $((SECONDS - start)) s"
left=$(ip netns list 2>/dev/null | awk '{print $1}' | grep '^rnt-vm-' || true)
if [ -n "$left" ]; then
  echo "the VM tier left lab namespaces behind: $left" >&2
  status=1
fi
exit $status
