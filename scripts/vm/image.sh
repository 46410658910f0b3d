#!/usr/bin/env bash
# Builds (or reuses) the guest image of one Debian release for the VM test bed
# (docs/vm.md): a debootstrap'd root from Debian's packages only, with Debian's
# own kernel and initramfs taken out of that root (never installed into this
# machine's /boot), as a qcow2 base image that guests boot through overlays.
#
# Usage: scripts/vm/image.sh RELEASE        (bookworm; needs root for debootstrap)
# Prints the image directory (holding base.qcow2, vmlinuz, initrd.img, recipe).
#
# The cache is keyed by the recipe: this script's text, the release and the
# package list. A changed recipe builds a new directory; nothing is downloaded
# but Debian packages (from $ROCE_NET_VM_MIRROR, default deb.debian.org).
# Env: ROCE_NET_VM_CACHE (default ~/.cache/roce-net/vm)
set -euo pipefail

release=${1:?usage: scripts/vm/image.sh RELEASE}
case "$release" in
bookworm | bullseye | trixie) ;;
*)
  echo "scripts/vm/image.sh: unknown release '$release' (bullseye, bookworm or trixie)" >&2
  exit 64
  ;;
esac
mirror=${ROCE_NET_VM_MIRROR:-http://deb.debian.org/debian}
cache=${ROCE_NET_VM_CACHE:-${HOME:-/root}/.cache/roce-net/vm}

# What every guest carries: systemd as init, the guest agent that drives it
# (no management network needed), Debian's kernel and initramfs, the
# RDMA user space (rdma-core with the rxe provider, perftest, rdmacm-utils) and
# the release's own Python with pip and venv (pip installs the roce_net wheel;
# the Ansible install role puts it into a venv, as on a managed node), and an
# SSH server (the management path of the dead man's switch and of Ansible).
packages=(
  systemd-sysv udev kmod dbus qemu-guest-agent linux-image-amd64 initramfs-tools
  iproute2 iputils-ping iputils-arping procps ethtool
  rdma-core ibverbs-providers ibverbs-utils perftest rdmacm-utils
  python3 python3-pip python3-venv openssh-server
)
# The newest generation also carries every network stack a node's admin may
# use (docs/persistence.md), for the reboot scenarios: netplan, NetworkManager
# and ifupdown (systemd-networkd is part of systemd). None of them is active
# until a test enables it, as an admin would.
if [ "$release" = trixie ]; then
  packages+=(netplan.io network-manager ifupdown)
fi
# Debian 12 also carries Slurm (22.05: slurmctld, slurmd, its clients and
# munge), for the cluster mesh the Slurm way (tests/vm/test_slurm_mesh.py): one
# release for the whole cluster, as slurmctld accepts slurmd of its own and the
# two previous releases only. Off until a test configures and starts it.
if [ "$release" = bookworm ]; then
  packages+=(slurmctld slurmd slurm-client munge)
fi

recipe=$(
  printf 'release=%s\npackages=%s\n' "$release" "${packages[*]}"
  cat "$0"
)
key=$(printf '%s' "$recipe" | sha256sum | cut -c1-16)
dir=$cache/$release-$key
# One build of a release at a time: a second caller (scripts/test.sh starts
# the builds early, in the background) waits for the first and reuses it.
mkdir -p "$cache"
exec 9>"$cache/.lock-$release"
flock 9
if [ -s "$dir/base.qcow2" ] && [ -s "$dir/vmlinuz" ] && [ -s "$dir/initrd.img" ]; then
  echo "$dir"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "scripts/vm/image.sh: building the $release image needs root (debootstrap); run it as root" >&2
  exit 77
fi
for tool in debootstrap mkfs.ext4 qemu-img; do
  command -v "$tool" >/dev/null || {
    echo "scripts/vm/image.sh: $tool not found (scripts/vm/install-deps.sh installs it)" >&2
    exit 69
  }
done

mkdir -p "$cache"
work=$(mktemp -d "$cache/.build-$release-XXXXXX")
# The root is unpacked under the cache, never anywhere of the machine's own;
# debootstrap mounts /proc and /sys inside it, so those go first on any exit.
cleanup() {
  for m in proc sys dev/pts dev; do
    mountpoint -q "$work/root/$m" 2>/dev/null && umount -l "$work/root/$m"
  done
  rm -rf "$work"
}
trap cleanup EXIT
start=$SECONDS
echo "vm image: debootstrap $release into $work/root (${#packages[@]} packages)" >&2
debootstrap --variant=minbase --include="$(
  IFS=,
  echo "${packages[*]}"
)" "$release" "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -30 "$work/debootstrap.log" >&2
  echo "scripts/vm/image.sh: debootstrap of $release failed (log above)" >&2
  exit 1
}
echo "vm image: debootstrap took $((SECONDS - start)) s" >&2

r=$work/root
echo "rnt-guest" >"$r/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 rnt-guest\n' >"$r/etc/hosts"
cat >"$r/etc/fstab" <<'EOF'
/dev/vda / ext4 rw,errors=remount-ro 0 1
# The roce-net build, shared read-only by the harness (9p over virtio).
rnshare /mnt/roce-net 9p trans=virtio,version=9p2000.L,ro,nofail,x-systemd.device-timeout=5 0 0
EOF
mkdir -p "$r/mnt/roce-net"
# The tests configure the NICs themselves: nothing else may (no DHCP client is
# installed), and nothing slow runs at boot.
for unit in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer \
  systemd-timesyncd.service man-db.timer getty@tty1.service; do
  ln -sf /dev/null "$r/etc/systemd/system/$unit"
done
# A small initramfs: only what finds and mounts the root disk (virtio, ext4);
# the generic one holds most of the kernel's drivers and takes TCG tens of
# seconds to unpack. Then multi-user, not graphical, is the boot's target.
printf 'MODULES=list\n' >"$r/etc/initramfs-tools/conf.d/roce-net-vm"
printf '%s\n' virtio_pci virtio_blk ext4 >>"$r/etc/initramfs-tools/modules"
chroot "$r" update-initramfs -u -k all >"$work/initramfs.log" 2>&1 || {
  cat "$work/initramfs.log" >&2
  echo "scripts/vm/image.sh: update-initramfs in the $release root failed" >&2
  exit 1
}
ln -sf /lib/systemd/system/multi-user.target "$r/etc/systemd/system/default.target"
# Installed stacks stay off until a test enables one (NetworkManager's package
# enables it, and with no profile it would take every NIC for DHCP).
for unit in NetworkManager.service NetworkManager-wait-online.service \
  NetworkManager-dispatcher.service systemd-networkd.service \
  systemd-networkd-wait-online.service networking.service \
  munge.service slurmctld.service slurmd.service; do
  if [ -e "$r/lib/systemd/system/$unit" ] || [ -e "$r/usr/lib/systemd/system/$unit" ]; then
    chroot "$r" systemctl disable "$unit" >/dev/null 2>&1 || true
  fi
done
# The kernel keeps its own names (eth0, eth1, ...) in the order of the PCI
# slots the harness gives the NICs.
kver=$(basename "$(ls -d "$r"/lib/modules/* | sort -V | tail -1)")
cp "$r/boot/vmlinuz-$kver" "$work/vmlinuz"
cp "$r/boot/initrd.img-$kver" "$work/initrd.img"
rm -rf "$r/var/cache/apt/archives/"*.deb "$r/var/lib/apt/lists/"*
du -sm "$r" | awk '{print "vm image: root is " $1 " MB"}' >&2
truncate -s 3G "$work/root.raw"
mkfs.ext4 -q -L rootfs -d "$r" "$work/root.raw"
qemu-img convert -O qcow2 "$work/root.raw" "$work/base.qcow2"
printf '%s\n' "$recipe" >"$work/recipe"
echo "$kver" >"$work/kernel-version"
mkdir -p "$dir"
mv "$work/base.qcow2" "$work/vmlinuz" "$work/initrd.img" "$work/recipe" "$work/kernel-version" "$dir/"
echo "vm image: $release ($kver) built in $((SECONDS - start)) s: $dir" >&2
echo "$dir"
