#!/bin/sh
# SPDX-License-Identifier: MIT
#
# firmware-package.sh [PACKAGE]: fetch a Debian firmware package (default
# firmware-misc-nonfree, from the non-free-firmware component) and unpack it
# into a cache keyed by its version. Prints the unpacked firmware directory
# (the package's lib/firmware or usr/lib/firmware), e.g. for
# $dir/e100/d101s_ucode.bin.
#
# The host's apt sources name only `main`; the same mirror serves
# non-free-firmware. A private apt configuration (its own sources, lists and
# caches under $FWH_CACHE/firmware/apt) finds and downloads the package:
# nothing of the host's apt state is read beyond its sources files, nothing
# is written to it, nothing is installed.
set -eu

# Parse the whole script before running it: a checkout edited while a run is
# going (shells read scripts as they go) must not change that run.
{

package=${1:-firmware-misc-nonfree}
cache=${FWH_CACHE:-$HOME/.cache/fw-helperd}/firmware
apt_dir=$cache/apt

log() { echo "firmware-package.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# host_sources() and $codename: the host's Debian entries, as the VM images take them.
. "$(dirname "$0")/image.sh"

# Those entries with their components replaced by non-free-firmware.
firmware_sources() {
	host_sources | sed 's/^Components:.*/Components: non-free-firmware/'
}

mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/archives/partial"
exec 9>"$cache/.lock"
flock 9

sources=$(firmware_sources)
[ -n "$sources" ] || die "no apt entries for $codename in /etc/apt/sources.list{,.d}"
if [ "$(cat "$apt_dir/sources.list.d/firmware.sources" 2>/dev/null)" != "$sources" ]; then
	printf '%s\n' "$sources" >"$apt_dir/sources.list.d/firmware.sources"
	rm -f "$apt_dir/lists/updated"
fi

# Everything apt reads or writes, except the keyrings the entries name. The
# cache usually sits under a 0700 $HOME, out of reach of apt's _apt user.
apt_opts="-o Dir::Etc::SourceList=/dev/null
	-o Dir::Etc::SourceParts=$apt_dir/sources.list.d
	-o Dir::State::Lists=$apt_dir/lists
	-o Dir::Cache=$apt_dir
	-o Dir::Cache::Archives=$apt_dir/archives
	-o APT::Sandbox::User=root"
# shellcheck disable=SC2086 # apt_opts: one word per line
apt_update() {
	apt-get -q=2 $apt_opts update >&2 || die "apt-get update (private lists in $apt_dir) failed"
	touch "$apt_dir/lists/updated"
}
# shellcheck disable=SC2086
candidate() {
	apt-cache $apt_opts show --no-all-versions "$package" 2>/dev/null | sed -n 's/^Version: //p' | head -n1
}

# Lists a day old are fresh enough: firmware packages change rarely, and an
# update costs a round trip to the mirror on every run.
if [ -z "$(find "$apt_dir/lists/updated" -mmin -1440 2>/dev/null)" ]; then
	apt_update
fi
version=$(candidate)
[ -n "$version" ] || die "no $package in the non-free-firmware lists ($apt_dir)"
dir=$cache/$package/$version

if [ ! -d "$dir/root" ]; then
	tmp=$dir.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# shellcheck disable=SC2086
	if ! (cd "$tmp" && apt-get -q=2 $apt_opts download "$package=$version") >&2; then
		# The archive may have moved on since the lists were fetched.
		rm -rf "$tmp"
		apt_update
		version=$(candidate)
		dir=$cache/$package/$version
		tmp=$dir.tmp.$$
		mkdir -p "$tmp"
		# shellcheck disable=SC2086
		(cd "$tmp" && apt-get -q=2 $apt_opts download "$package=$version") >&2 \
			|| { rm -rf "$tmp"; die "downloading $package $version failed"; }
	fi
	if [ ! -d "$dir/root" ]; then
		dpkg-deb -x "$tmp"/*.deb "$tmp/root"
		rm -f "$tmp"/*.deb
		rm -rf "$dir"
		mv "$tmp" "$dir"
		log "$package $version cached in $dir"
		# Older versions of this package.
		for old in "$cache/$package"/*; do
			[ "$old" = "$dir" ] || rm -rf "$old"
		done
	fi
	rm -rf "$tmp"
fi

for d in "$dir/root/usr/lib/firmware" "$dir/root/lib/firmware"; do
	if [ -d "$d" ]; then
		echo "$d"
		exit 0
	fi
done
die "$package $version has no lib/firmware or usr/lib/firmware"
}
