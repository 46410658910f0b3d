#!/usr/bin/env bash
# The demo: builds roce-net as you, then runs `roce-net lab` (a broken multi-NIC
# RoCE host in network namespaces, diagnosed, fixed, shown fixed) as root, since
# creating namespaces needs it.
#
# Usage: scripts/lab.sh [lab options, e.g. --nics 8 --keep --json; --ipv6 for
#        the same host on an IPv6 rail, fd00:198:18::/64]
#
# cargo comes from your PATH or ~/.cargo/bin (rustup's place); run as root via
# `sudo`, the build still runs as the user who called sudo, so target/ and
# ~/.cargo stay theirs. The binary then runs directly when you are root, through
# sudo when it is there, and otherwise the script prints the one command to run
# as root.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/as-user.sh

# The one release build both demos run: scripts/vm-lab.sh builds exactly this
# (with the `verbs` feature, which loads libibverbs at run time, so the binary
# runs the same without it), so after this lab the VM demo builds nothing.
build_as_user cargo build --release --locked --features verbs --bin roce-net
bin="$(target_dir)/release/roce-net"
# The script becomes the lab (exec; through sudo, it becomes sudo, which relays
# signals to the lab), so Ctrl-C, a CI timeout's SIGTERM or a dropped session's
# SIGHUP sent to the script reach the lab; it then removes what it built and
# says what.
exec_as_root "$bin" lab "$@"
