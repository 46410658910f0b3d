#!/usr/bin/env bash
# Installs what the VM tier and demo need on this (Debian) machine, as root:
# qemu-system-x86, debootstrap, e2fsprogs (mkfs.ext4 -d), qemu-utils, and the
# SSH client the harness reaches guests with (openssh-client). Nothing is
# started, no service enabled, and the machine's /etc/apt is not changed: where
# the machine's qemu-utils comes from bookworm-backports (it then breaks
# bookworm's own qemu-system-x86 7.2), qemu-system-x86 comes from there too,
# through a private apt source list given on the command line.
set -euo pipefail
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v qemu-img >/dev/null || need+=(qemu-utils)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
{ command -v ssh && command -v ssh-keygen; } >/dev/null || need+=(openssh-client)
if [ ${#need[@]} -eq 0 ]; then
  echo "==> the VM tier's tools are installed (qemu-system-x86_64, qemu-img, debootstrap, mkfs.ext4, ssh)"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "scripts/vm/install-deps.sh: ${need[*]} missing; as root run: scripts/vm/install-deps.sh" >&2
  exit 77
fi
export DEBIAN_FRONTEND=noninteractive
echo "==> installing for the VM tier: ${need[*]}"
apt=(apt-get)
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
if [ "$codename" = bookworm ] && dpkg-query -W -f '${Version}' qemu-utils 2>/dev/null | grep -q '~bpo12'; then
  list=$(mktemp)
  trap 'rm -f "$list"' EXIT
  {
    echo "deb http://deb.debian.org/debian bookworm main"
    echo "deb http://deb.debian.org/debian bookworm-updates main"
    echo "deb http://deb.debian.org/debian-security bookworm-security main"
    echo "deb http://deb.debian.org/debian bookworm-backports main"
  } >"$list"
  apt=(apt-get -o "Dir::Etc::SourceList=$list" -o "Dir::Etc::SourceParts=/nonexistent")
  "${apt[@]}" update -qq
  "${apt[@]}" install -y -qq --no-install-recommends -t bookworm-backports "${need[@]}"
else
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
