#!/bin/sh
# SPDX-License-Identifier: MIT
#
# disk.sh SERIES: build the disk bed's root, a Debian root on an ext4 disk
# image that boots like an installed machine: Debian's stock kernel of SERIES
# (6.1 or 6.12, the version kernel.sh resolves) and its headers installed
# by dpkg inside the image, Debian's own initramfs made by initramfs-tools in
# the image, dkms and a compiler for fwh-cache-dkms, and the packages of
# rootfs.packages and disk.packages. No loop mounts: mmdebstrap into a
# directory, then `mkfs.ext4 -d` into a sparse raw file; the kernel and
# initrd to boot are read back from the image with debugfs.
#
# Cached in $FWH_CACHE/disk/<series>-<hash>/, the hash covering this script,
# image.sh, the package set of both lists with the kernel packages at their
# version, the baked-in guest files and the host's apt entries. Prints DISK_IMAGE (raw, never
# written by a run: boot a qcow2 overlay on it), DISK_VMLINUZ, DISK_INITRD,
# KRELEASE, KPKGVER.
set -eu

# Parse the whole script before running it: a checkout edited while a run is
# going (shells read scripts as they go) must not change that run.
{

here=$(cd "$(dirname "$0")" && pwd)
series=${1:-}
cache=${FWH_CACHE:-$HOME/.cache/fw-helperd}/disk

log() { echo "disk.sh: $*" >&2; }
die() { log "$*"; exit 1; }
[ -n "$series" ] || die "usage: disk.sh 6.1|6.12"

. "$here/image.sh"

resolved=$("$here/kernel.sh" --resolve "$series") || die "kernel.sh --resolve $series failed"
eval "$resolved"
# Baked into the image: the payload copier and the runner's unit.
baked="$here/disk/payload.sh $here/disk/fwh-vmtest-payload.service $here/guest/fwh-vmtest.service"
packages=$(package_list "$here/rootfs.packages" "$here/disk.packages"),$IMAGE_PKG=$KPKGVER,$HEADERS_PKG=$KPKGVER
sources=$(host_sources)
[ -n "$sources" ] || die "no apt entries for $codename in /etc/apt/sources.list{,.d}"

# The package set, not the lists' text: a comment or a package named in
# both lists does not rebuild the image.
# shellcheck disable=SC2086 # $baked: paths without blanks
hash=$( { cat "$0" "$here/image.sh" $baked; echo "$packages"; echo "$sources"; } \
	| sha256sum | cut -c1-16)
dir=$cache/$series-$hash

if [ ! -f "$dir/disk.env" ]; then
	mkdir -p "$cache"
	exec 9>"$cache/.lock-$series"
	flock 9
fi

if [ ! -f "$dir/disk.env" ]; then
	[ "$(id -u)" -eq 0 ] || die "building the disk image needs root (mmdebstrap root mode keeps file owners)"
	find "$cache" -mindepth 1 -maxdepth 1 -name '*.tmp.*' -mtime +1 -exec rm -rf {} +
	tmp=$dir.tmp.$$
	root=$tmp/root
	rm -rf "$tmp"
	mkdir -p "$tmp"
	log "building $series image $hash ($packages)"
	# Module trees for hardware qemu does not emulate here (~140 MB of
	# 6.1's 390 MB) stay out of the image. The kernel's postinst makes
	# the first initrd with initramfs-tools' default MODULES=most.
	modexcl=
	for d in drivers/gpu drivers/media drivers/infiniband drivers/net/wireless \
		drivers/staging drivers/iio sound; do
		modexcl="$modexcl --dpkgopt=path-exclude=/lib/modules/*/kernel/$d/*"
		modexcl="$modexcl --dpkgopt=path-exclude=/usr/lib/modules/*/kernel/$d/*"
	done
	# shellcheck disable=SC2086 # $modexcl: options without blanks
	echo "$sources" | image_mmdebstrap "$root" "$packages" $modexcl

	image_tune "$root"
	# Booted with root=/dev/vda ro, like an installed machine: the
	# initramfs checks it, systemd remounts it rw from here.
	printf '/dev/vda\t/\text4\terrors=remount-ro\t0\t1\n' >"$root/etc/fstab"
	# Later initramfs builds (in the guest, after dpkg -i or by a case)
	# take only the modules the running system needs to reach its root
	# (virtio-blk, ext4): under TCG a MODULES=most build takes minutes.
	echo 'MODULES=dep' >"$root/etc/initramfs-tools/conf.d/fwh-vm"

	install -D -m 0755 "$here/disk/payload.sh" "$root/usr/lib/fwh-vmtest-disk/payload.sh"
	install -m 0644 "$here/disk/fwh-vmtest-payload.service" "$here/guest/fwh-vmtest.service" \
		"$root/etc/systemd/system/"
	systemctl --root="$root" enable --quiet fwh-vmtest-payload.service fwh-vmtest.service

	[ -f "$root/boot/vmlinuz-$KRELEASE" ] && [ -f "$root/boot/initrd.img-$KRELEASE" ] \
		|| die "no /boot/vmlinuz-$KRELEASE or initrd.img-$KRELEASE in the image"
	[ -d "$root/usr/src/linux-headers-$KRELEASE" ] || die "no headers for $KRELEASE in the image"

	(cd "$root" && du -sm . | cut -f1) >"$tmp/used-mb"
	used=$(cat "$tmp/used-mb")
	# Room for dkms builds, journals and the cases' blobs; sparse anyway.
	size=$(( used + 1536 ))
	log "making ext4 of ${size} MiB from $used MiB"
	truncate -s "${size}M" "$tmp/base.img"
	mkfs.ext4 -q -F -L fwh-root -d "$root" "$tmp/base.img"
	rm -rf "$root"

	# What the guest boots first, read back from the image itself.
	debugfs -R "dump /boot/vmlinuz-$KRELEASE $tmp/vmlinuz" "$tmp/base.img" 2>/dev/null
	debugfs -R "dump /boot/initrd.img-$KRELEASE $tmp/initrd.img" "$tmp/base.img" 2>/dev/null
	[ -s "$tmp/vmlinuz" ] && [ -s "$tmp/initrd.img" ] || die "debugfs could not read /boot from the image"

	cat >"$tmp/disk.env" <<-EOF2
	DISK_IMAGE=$dir/base.img
	DISK_VMLINUZ=$dir/vmlinuz
	DISK_INITRD=$dir/initrd.img
	KRELEASE=$KRELEASE
	KPKGVER=$KPKGVER
	EOF2
	rm -rf "$dir"
	mv "$tmp" "$dir"
	du -sh --apparent-size "$dir/base.img" >&2
	du -sh "$dir/base.img" "$dir/initrd.img" >&2
	# Images unused for two days only fill the disk (another checkout may
	# be booting a younger one right now).
	find "$cache" -mindepth 1 -maxdepth 1 -type d -mtime +2 -exec rm -rf {} +
	log "cached in $dir"
fi

touch "$dir"                    # last use, for the pruning above
cat "$dir/disk.env"
exit
}
