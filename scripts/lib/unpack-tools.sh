#!/usr/bin/env bash
# Unpacks the command-line tools the tests judge roce-net's output with from
# Debian's packages into a private directory, instead of installing those
# packages on the machine (scripts/test.sh, README "Testing").
#
# Usage: scripts/lib/unpack-tools.sh DIR PACKAGE:TOOL...
#        (e.g. network-manager:nmcli prometheus:promtool; needs apt's package
#        lists, which scripts/test.sh updates just before)
# Leaves DIR/bin/TOOL, a link into DIR/root (the packages unpacked with
# `dpkg -x`, as the kernel packages of the VM images are). Nothing is
# installed: no maintainer script runs, no service, user or unit appears, and
# none of the packages' dependencies is pulled in (the tools' shared libraries
# must already be there; scripts/test.sh installs those that are not, libraries
# only). A tool already unpacked is kept.
set -euo pipefail

dir=${1:?usage: scripts/lib/unpack-tools.sh DIR PACKAGE:TOOL...}
shift
mkdir -p "$dir/bin" "$dir/root" "$dir/debs"
for spec in "$@"; do
  pkg=${spec%%:*}
  tool=${spec#*:}
  [ -x "$dir/bin/$tool" ] && continue
  rm -f "$dir/debs/${pkg}"_*.deb
  # apt-get download writes into the current directory (as root it warns that
  # the download runs unsandboxed; the directory is root's own).
  if ! (cd "$dir/debs" && apt-get download -qq "$pkg" 2>&1 | grep -v 'unsandboxed' >&2; exit "${PIPESTATUS[0]}"); then
    echo "scripts/lib/unpack-tools.sh: apt-get download $pkg failed (are apt's package lists current? apt-get update)" >&2
    exit 1
  fi
  deb=$(ls "$dir/debs/${pkg}"_*.deb)
  dpkg -x "$deb" "$dir/root"
  rm -f "$deb"
  bin=
  for b in usr/bin usr/sbin bin sbin; do
    if [ -x "$dir/root/$b/$tool" ]; then
      bin=$dir/root/$b/$tool
      break
    fi
  done
  if [ -z "$bin" ]; then
    echo "scripts/lib/unpack-tools.sh: $deb holds no $tool" >&2
    exit 1
  fi
  ln -sfn "$bin" "$dir/bin/$tool"
  echo "unpacked $tool from $(basename "$deb") into $dir"
done
