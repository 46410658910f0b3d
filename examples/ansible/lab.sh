#!/usr/bin/env bash
# A lab for the example playbooks: two hosts in network namespaces, rnt-ex-h1
# and rnt-ex-h2, with two NICs each (r0, r1: 198.18.<k>.11/16 and .12/16 on
# host k) on one switch (namespace rnt-ex-sw), as a GPU node comes: kernel
# defaults, ARP flux, no source routing. Each host has its own /etc root and
# state directory under lab/ here (lab-inventory.ini names them), so the
# playbooks never write this machine's /etc/iproute2 or /run/roce-net.
#
# Usage, as root:  ./lab.sh           build it (refused when it is there)
#                  ./lab.sh --remove  remove it: the rnt-ex-* namespaces, lab/
set -euo pipefail
cd "$(dirname "$0")"
hosts=(h1 h2)
spaces=(rnt-ex-sw rnt-ex-h1 rnt-ex-h2)

remove() {
  local n
  for n in "${spaces[@]}"; do
    if [ -e "/run/netns/$n" ]; then
      ip netns del "$n"
    fi
  done
  rm -rf lab
}

case "${1:-}" in
--remove)
  remove
  echo "removed the lab: namespaces ${spaces[*]}, $PWD/lab"
  exit 0
  ;;
"") ;;
*)
  echo "usage: $0 [--remove]" >&2
  exit 64
  ;;
esac
if [ "$(id -u)" != 0 ]; then
  echo "$0: run it as root (it creates network namespaces)" >&2
  exit 77
fi
for n in "${spaces[@]}"; do
  if [ -e "/run/netns/$n" ]; then
    echo "$0: namespace $n is there already (an earlier lab?): ./lab.sh --remove first" >&2
    exit 1
  fi
done
# Whatever stops the build (an error, Ctrl-C) removes what it made.
trap 'remove; exit 1' ERR INT TERM HUP

ip netns add rnt-ex-sw
ip -n rnt-ex-sw link add br0 type bridge
ip -n rnt-ex-sw link set br0 up
k=0
for h in "${hosts[@]}"; do
  k=$((k + 1))
  ns=rnt-ex-$h
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  for i in 0 1; do
    ip -n rnt-ex-sw link add "$h-r$i" type veth peer name "r$i" netns "$ns"
    ip -n rnt-ex-sw link set "$h-r$i" master br0 up
    ip -n "$ns" addr add "198.18.$k.1$((i + 1))/16" dev "r$i"
    ip -n "$ns" link set "r$i" up
  done
  mkdir -p "lab/etc/$h" "lab/run/$h"
done
trap - ERR INT TERM HUP
echo "lab ready: hosts ${hosts[*]} in namespaces rnt-ex-h1 and rnt-ex-h2 (NICs r0, r1),"
echo "their /etc roots and state directories in $PWD/lab (lab-inventory.ini);"
echo "remove it with ./lab.sh --remove"
