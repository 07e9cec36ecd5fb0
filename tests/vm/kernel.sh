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
#
# The ABI number is resolved from the archive every time (the archive drops
# old ones), so nothing here pins a version. Everything is unpacked with
# dpkg-deb -x into a private root: nothing is installed on the host.
set -eu

series=${1:-}
cache=${FWH_CACHE:-$HOME/.cache/fw-helperd}/kernel

log() { echo "kernel.sh: $*" >&2; }
die() { log "$*"; exit 1; }

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
	[ -n "$meta_dep" ] || die "linux-image-amd64 has no linux-image-6.1.* dependency (run apt-get update?)"
	image_pkg=$meta_dep-unsigned
	;;
6.12)
	# Highest version wins, compared the way dpkg does (sort -V mis-orders ~).
	image_pkg= best=
	for p in $(apt-cache pkgnames linux-image-6.12. | grep -E '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$'); do
		v=$(pkg_version "$p")
		[ -n "$v" ] || continue
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then
			best=$v image_pkg=$p
		fi
	done
	[ -n "$image_pkg" ] || die "no linux-image-6.12.*+deb12-amd64-unsigned in the apt lists (run apt-get update?)"
	;;
*)
	die "usage: kernel.sh 6.1|6.12"
	;;
esac

version=$(pkg_version "$image_pkg")
[ -n "$version" ] || die "cannot resolve version of $image_pkg"
abi=${image_pkg#linux-image-}
abi=${abi%-unsigned}                   # e.g. 6.1.0-57-amd64, 6.12.118+deb12-amd64
dir=$cache/$version

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
	tmp=$dir.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp/debs"
	# The cache usually sits under a 0700 $HOME, out of reach of apt's _apt user.
	(cd "$tmp/debs" && apt-get download -q=2 -o APT::Sandbox::User=root "$image_pkg=$version" "$headers_pkg=$version" \
		"$common_pkg=$version" "$kbuild_pkg") >&2
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
	make -s -C "$kdir" M="$tmp/selftest" modules >"$tmp/selftest/build.log" 2>&1 \
		|| { cat "$tmp/selftest/build.log" >&2; die "trivial module does not build against $kdir"; }
	rm -rf "$tmp/selftest"

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

cat "$dir/kernel.env"
