#!/bin/sh
# SPDX-License-Identifier: MIT
#
# rootfs.sh: build the guest's root filesystem, a Debian minbase with systemd,
# packed as one compressed cpio that the kernel unpacks as its initramfs and
# keeps as / (no disk, so the guest needs no virtio-blk/9p modules).
#
# Packages come from the host's own apt sources, restricted to the entries of
# the host's release (others, e.g. vendor repositories, are unreachable or
# irrelevant in the guest). The result is cached in
# $FWH_CACHE/rootfs/<hash>/, the hash covering this script, rootfs.packages,
# those apt sources and the compression. Prints ROOTFS_CPIO=<path> and
# ROOTFS_DIRS=<path> (the image's directories: "path mode uid gid" lines).
#
# FWH_VM_COMPRESS=none|zstd|gzip picks the cpio compression. Default none:
# under TCG the kernel needs ~4 s to inflate a zstd or gzip image of this
# size and ~1.5 s to copy a plain one (README.md has the figures); disk is
# cheaper than boot time here.
set -eu

# Parse the whole script before running it: a checkout edited while a run is
# going (shells read scripts as they go) must not change that run.
{

here=$(cd "$(dirname "$0")" && pwd)
cache=${FWH_CACHE:-$HOME/.cache/fw-helperd}/rootfs
compress=${FWH_VM_COMPRESS:-none}

log() { echo "rootfs.sh: $*" >&2; }
die() { log "$*"; exit 1; }

. "$here/image.sh"

packages=$(package_list "$here/rootfs.packages")
sources=$(host_sources)
[ -n "$sources" ] || die "no apt entries for $codename in /etc/apt/sources.list{,.d}"

hash=$( { cat "$0" "$here/image.sh" "$here/rootfs.packages"; echo "$sources"; echo "$compress"; } | sha256sum | cut -c1-16)
dir=$cache/$hash
case "$compress" in
zstd) ext=cpio.zst; compressor="zstd -q -T0 -10" ;;
gzip) ext=cpio.gz; compressor="gzip -6" ;;
none) ext=cpio; compressor="cat" ;;
*) die "FWH_VM_COMPRESS must be zstd, gzip or none" ;;
esac
cpio_file=$dir/rootfs.$ext

if [ ! -f "$cpio_file" ]; then
	mkdir -p "$cache"
	exec 9>"$cache/.lock"
	flock 9
fi

if [ ! -f "$cpio_file" ]; then
	[ "$(id -u)" -eq 0 ] || die "building the rootfs needs root (mmdebstrap root mode keeps file owners)"
	# Leftovers of interrupted builds.
	find "$cache" -mindepth 1 -maxdepth 1 -name '*.tmp.*' -mtime +1 -exec rm -rf {} +
	tmp=$dir.tmp.$$
	root=$tmp/root
	rm -rf "$tmp"
	mkdir -p "$tmp"
	log "building rootfs $hash ($packages)"
	echo "$sources" | image_mmdebstrap "$root" "$packages"

	# The kernel leaves an initramfs root at mode 0700; dbus-daemon (as
	# messagebus) then cannot reach systemd's notify socket and the boot
	# stalls behind dbus and logind. Open it up before systemd starts.
	cat >"$root/init" <<-'EOF'
	#!/bin/sh
	chmod 0755 /
	exec /lib/systemd/systemd "$@"
	EOF
	chmod 0755 "$root/init"

	image_tune "$root"
	: >"$root/etc/fstab"

	# Modes of the image's directories: a later cpio (the per-run payload)
	# that lists one of them must carry the same mode, or unpacking it
	# changes the directory (the kernel applies each entry's mode).
	(cd "$root" && find . -mindepth 1 -type d -printf '%P %m %U %G\n') >"$tmp/dirs.txt"

	log "packing $ext"
	(cd "$root" && find . -mindepth 1 | LC_ALL=C sort \
		| cpio --quiet -o -H newc) | $compressor >"$tmp/rootfs.$ext"
	du -sh "$root" "$tmp/rootfs.$ext" >&2
	rm -rf "$root"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	# Images unused for two days only fill the disk. Not younger ones:
	# another checkout on this machine (other packages, other script) may
	# be booting one right now.
	find "$cache" -mindepth 1 -maxdepth 1 -type d -mtime +2 -exec rm -rf {} +
	log "cached in $dir"
fi

touch "$dir"                    # last use, for the pruning above
echo "ROOTFS_CPIO=$cpio_file"
echo "ROOTFS_DIRS=$dir/dirs.txt"
exit
}
