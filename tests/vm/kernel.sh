#!/bin/sh
# SPDX-License-Identifier: MIT
#
# kernel.sh SERIES: fetch Debian's stock kernel of SERIES (6.1 or 6.12) and the
# headers to build out-of-tree modules against it, unpacked into a cache keyed
# by the package version. Prints KEY=value lines (also kept in kernel.env in the
# cache dir) for the caller to eval:
#   VMLINUZ      the bzImage
#   MODULES_DIR  /lib/modules/<release> of that kernel (unpacked, not installed)
#   KDIR         headers dir usable as `make -C $KDIR M=...`
#   KRELEASE     uname -r inside the guest
#   KPKGVER      Debian package version, the cache key
#   MODULES_CPIO the guest's subset of modules (below), depmod'ed, as a cpio
#
# kernel.sh --resolve SERIES only resolves, fetches nothing, and prints
# IMAGE_PKG, HEADERS_PKG, KRELEASE and KPKGVER (disk.sh installs those
# packages into its image with dpkg).
#
# The ABI number is resolved from the archive every time (the archive drops
# old ones), so nothing here pins a version. Everything is unpacked with
# dpkg-deb -x into a private root: nothing is installed on the host.
set -eu

# Parse the whole script before running it: a checkout edited while a run is
# going (shells read scripts as they go) must not change that run.
{

resolve_only=
[ "${1:-}" = --resolve ] && { resolve_only=1; shift; }
series=${1:-}
version=
cache=${FWH_CACHE:-$HOME/.cache/fw-helperd}/kernel

# Modules the guest gets, with their dependencies (FWH_VM_MODULES adds
# more). The full tree is ~400 MB unpacked: far too much to copy into RAM
# on every boot. loop, dm_mod, ext4 and crc32c_generic (ext4 asks the crypto
# API for crc32c at mount): a failing disk under a firmware root
# (cases/50-fault-read-error.sh), dm_delay a slow one (cases/50-fault-kill-midprewarm.sh).
# e100 (with mii): a real driver that calls request_firmware() for qemu's
# emulated i8255x NICs (cases/60-real-driver.sh).
guest_modules="test_firmware loop dm_mod dm_delay ext4 crc32c_generic e100 ${FWH_VM_MODULES:-}"

log() { echo "kernel.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# Stale or missing apt lists: the archive drops old ABIs, so a version from
# old lists may no longer download. Refresh them once (as root) and retry.
retry_after_update() {
	if [ -z "${FWH_KERNEL_RETRIED:-}" ] && [ "$(id -u)" -eq 0 ]; then
		log "$*; running apt-get update and retrying"
		apt-get update -qq >&2 || die "apt-get update failed"
		FWH_KERNEL_RETRIED=1 exec "$0" ${resolve_only:+--resolve} "$series"
	fi
	die "$*"
}

# Candidate version of a package, as apt would install it.
pkg_version() {
	apt-cache show --no-all-versions "$1" 2>/dev/null | sed -n 's/^Version: //p' | head -n1
}

# Names of packages in the Depends of $1 matching the extended regex $2.
pkg_depends_matching() {
	apt-cache show --no-all-versions "$1" | sed -n 's/^Depends: //p' | tr ',|' '\n\n' \
		| sed 's/^ *//; s/ .*//' | grep -E "$2" || true
}

# Resolve the image package (the -unsigned flavour: the same kernel without
# the signature wrapper, which qemu's direct boot does not need).
case "$series" in
6.1)
	meta_dep=$(pkg_depends_matching linux-image-amd64 '^linux-image-6\.1\.[0-9]+-[0-9]+-amd64$' | head -n1)
	[ -n "$meta_dep" ] || retry_after_update "linux-image-amd64 has no linux-image-6.1.* dependency"
	image_pkg=$meta_dep-unsigned
	;;
6.12)
	# Highest version wins, compared the way dpkg does (sort -V mis-orders
	# ~). One apt-cache call for all: each call costs ~1 s where apt keeps
	# no pkgcache.bin.
	names=$(apt-cache pkgnames linux-image-6.12. | grep -E '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' || true)
	image_pkg='' version=''
	if [ -n "$names" ]; then
		candidates=$(apt-cache show --no-all-versions $names \
			| awk '/^Package:/ { p = $2 } /^Version:/ { print p, $2 }')
		while read -r p v; do
			if [ -z "$version" ] || dpkg --compare-versions "$v" gt "$version"; then
				version=$v image_pkg=$p
			fi
		done <<-EOF
		$candidates
		EOF
	fi
	[ -n "$image_pkg" ] || retry_after_update "no linux-image-6.12.*+deb12-amd64-unsigned in the apt lists"
	;;
*)
	die "usage: kernel.sh 6.1|6.12"
	;;
esac

[ -n "${version:-}" ] || version=$(pkg_version "$image_pkg")
[ -n "$version" ] || die "cannot resolve version of $image_pkg"
abi=${image_pkg#linux-image-}
abi=${abi%-unsigned}                   # e.g. 6.1.0-57-amd64, 6.12.118+deb12-amd64
dir=$cache/$version

if [ -n "$resolve_only" ]; then
	echo "IMAGE_PKG=$image_pkg"
	echo "HEADERS_PKG=linux-headers-$abi"
	echo "KRELEASE=$abi"
	echo "KPKGVER=$version"
	exit
fi

if [ ! -f "$dir/kernel.env" ]; then
	mkdir -p "$cache"
	# Two runs may race on a cold cache (e.g. both kernels in parallel CI jobs).
	exec 9>"$cache/.lock-$version"
	flock 9
fi

if [ ! -f "$dir/kernel.env" ]; then
	headers_pkg=linux-headers-$abi
	common_pkg=$(pkg_depends_matching "$headers_pkg" '^linux-headers-.*-common$' | head -n1)
	kbuild_pkg=$(pkg_depends_matching "$headers_pkg" '^linux-kbuild-' | head -n1)
	[ -n "$common_pkg" ] && [ -n "$kbuild_pkg" ] \
		|| die "cannot resolve -common/-kbuild packages from $headers_pkg"

	log "fetching $image_pkg $headers_pkg $common_pkg $kbuild_pkg ($version)"
	# Leftovers of interrupted fetches.
	find "$cache" -mindepth 1 -maxdepth 1 -name '*.tmp.*' -mtime +1 -exec rm -rf {} +
	tmp=$dir.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp/debs"
	# The cache usually sits under a 0700 $HOME, out of reach of apt's _apt user.
	(cd "$tmp/debs" && apt-get download -q=2 -o APT::Sandbox::User=root "$image_pkg=$version" "$headers_pkg=$version" \
		"$common_pkg=$version" "$kbuild_pkg") >&2 \
		|| { rm -rf "$tmp"; retry_after_update "downloading $image_pkg $version failed"; }
	for deb in "$tmp"/debs/*.deb; do
		dpkg-deb -x "$deb" "$tmp/root"
	done
	rm -rf "$tmp/debs"

	# Debian's per-flavour headers Makefile includes the -common one by an
	# absolute /usr/src path; point it at the copy beside it instead. The
	# kernel's Makefile finds its srctree from its own location, so this is
	# all that ties KDIR to /usr/src.
	kdir=$tmp/root/usr/src/linux-headers-$abi
	sed -i 's|^include /usr/src/\(.*\)$|include $(dir $(realpath $(lastword $(MAKEFILE_LIST))))../\1|' \
		"$kdir/Makefile"
	# lib/modules/*/build|source point at /usr/src absolutely; fix those too.
	for l in "$tmp"/root/lib/modules/*/build "$tmp"/root/lib/modules/*/source; do
		[ -L "$l" ] || continue
		t=$(readlink "$l")
		case "$t" in /usr/src/*) ln -sfn "../../../usr/src/${t#/usr/src/}" "$l" ;; esac
	done

	# Prove the headers build a module before calling the cache good.
	mkdir -p "$tmp/selftest"
	cat >"$tmp/selftest/selftest.c" <<-'EOF'
	#include <linux/module.h>
	static int __init selftest_init(void) { return 0; }
	static void __exit selftest_exit(void) { }
	module_init(selftest_init);
	module_exit(selftest_exit);
	MODULE_LICENSE("GPL");
	EOF
	echo 'obj-m := selftest.o' >"$tmp/selftest/Kbuild"
	# 6.12's headers ship vmlinux, so kbuild generates module BTF with pahole
	# (package dwarves); without it, skip BTF rather than fail (run.sh does
	# the same for module/).
	btf=
	command -v pahole >/dev/null || btf=CONFIG_DEBUG_INFO_BTF_MODULES=
	make -s -C "$kdir" M="$tmp/selftest" $btf modules >"$tmp/selftest/build.log" 2>&1 \
		|| { cat "$tmp/selftest/build.log" >&2; die "trivial module does not build against $kdir"; }
	rm -rf "$tmp/selftest"

	# modules.dep is generated at install time; make it once for the whole
	# tree, to resolve dependencies of the guest subset from it.
	for m in "$tmp"/root/lib/modules/*; do
		depmod -b "$tmp/root" "${m##*/}"
	done

	rm -rf "$dir"
	mv "$tmp" "$dir"
	modules_dir=$(ls -d "$dir"/root/lib/modules/* "$dir"/root/usr/lib/modules/* 2>/dev/null | head -n1)
	[ -n "$modules_dir" ] || die "no modules dir in $image_pkg"
	vmlinuz=$(ls "$dir"/root/boot/vmlinuz-* | head -n1)
	cat >"$dir/kernel.env.tmp" <<-EOF
	VMLINUZ=$vmlinuz
	MODULES_DIR=$modules_dir
	KDIR=$dir/root/usr/src/linux-headers-$abi
	KRELEASE=${modules_dir##*/}
	KPKGVER=$version
	KSERIES=$series
	EOF
	mv "$dir/kernel.env.tmp" "$dir/kernel.env"

	# Keep the cache from growing with every ABI bump: drop older builds of
	# this series.
	for old in "$cache"/*/kernel.env; do
		[ -f "$old" ] || continue
		[ "$old" = "$dir/kernel.env" ] && continue
		old=${old%/kernel.env}
		grep -qx "KSERIES=$series" "$old/kernel.env" && rm -rf "$old" "$cache/.lock-${old##*/}"
	done
	log "cached in $dir"
fi

# The guest's modules, as a cpio of usr/lib/modules/<release> (under usr/:
# the guest's /lib is a symlink, and an archive entry "lib" would clash).
. "$dir/kernel.env"
mods_hash=$( { cat "$0"; echo "$guest_modules"; } | sha256sum | cut -c1-12)
modules_cpio=$dir/modules-$mods_hash.cpio
if [ ! -f "$modules_cpio" ]; then
	[ -f "$MODULES_DIR/modules.dep" ] || depmod -b "${MODULES_DIR%/lib/modules/*}" "$KRELEASE"
	stage=$dir/modules-stage.$$
	rm -rf "$stage"
	dst=$stage/usr/lib/modules/$KRELEASE
	mkdir -p "$dst"
	cp "$MODULES_DIR"/modules.builtin "$MODULES_DIR"/modules.builtin.modinfo \
		"$MODULES_DIR"/modules.order "$dst/"
	for m in $guest_modules; do
		# modules.dep: "kernel/x/m.ko[.xz]: dep1.ko dep2.ko", deps already
		# transitive.
		# (file names may spell the module's _ as -)
		line=$(grep -E "/$(echo "$m" | sed 's/[-_]/[-_]/g')\.ko(\.[a-z]+)?:" "$MODULES_DIR/modules.dep") \
			|| die "module $m not in $MODULES_DIR"
		for f in $(echo "$line" | tr -d :); do
			mkdir -p "$dst/${f%/*}"
			cp "$MODULES_DIR/$f" "$dst/$f"
		done
	done
	depmod -b "$stage/usr" "$KRELEASE"
	(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) \
		>"$modules_cpio.tmp.$$"
	mv "$modules_cpio.tmp.$$" "$modules_cpio"
	rm -rf "$stage"
	# Other lists' archives, unless another checkout used them lately.
	find "$dir" -maxdepth 1 -name 'modules-*.cpio' -mtime +2 -delete
fi
touch "$modules_cpio"

cat "$dir/kernel.env"
echo "MODULES_CPIO=$modules_cpio"
exit
}
