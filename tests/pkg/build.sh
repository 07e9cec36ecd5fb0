#!/bin/bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages fw-helperd and fwh-cache-dkms from a clean export of the
# repository (git archive), fails on a lintian error, and copies the .debs into an
# output directory, printing their paths.
#
#   tests/pkg/build.sh [--out DIR] [--with-prev]
#
#   --out DIR           where the .debs go (default: build-deb/ at the repository root)
#   --with-prev         also build the same tree as version 0.1.0-0~prev1 into DIR/prev/,
#                       the "previous build" an upgrade test installs first
#   FWH_PKG_WORKTREE=1  export the working tree (tracked files and untracked ones git
#                       does not ignore, as they are now) instead of HEAD
#
# Nothing is kept between runs but the .debs and the build logs in DIR.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
out=$top/build-deb
with_prev=
prev_version=0.1.0-0~prev1

while [ $# -gt 0 ]; do
	case $1 in
	--out) [ $# -ge 2 ] || { echo "build.sh: --out needs a directory" >&2; exit 2; }
	       out=$2; shift 2 ;;
	--out=*) out=${1#--out=}; shift ;;
	--with-prev) with_prev=1; shift ;;
	-h|--help) sed -n '3,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "build.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done

log() { echo "pkg: $*" >&2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The tree to build, as a git tree object. For the working tree, a private index
# (the real one is left alone) gets every file that is not ignored.
if [ -n "${FWH_PKG_WORKTREE:-}" ]; then
	index=$work/index
	cp "$(cd "$top" && git rev-parse --path-format=absolute --git-path index)" "$index"
	GIT_INDEX_FILE=$index git -C "$top" add -A
	tree=$(GIT_INDEX_FILE=$index git -C "$top" write-tree)
	log "building the working tree (tree $tree)"
else
	tree=$(git -C "$top" rev-parse 'HEAD^{tree}')
	log "building HEAD ($(git -C "$top" rev-parse --short HEAD))"
fi

# Lean: both cores at most, no -dbgsym package. The previous build skips the unit
# tests, which ran on the same tree already.
base_opts="parallel=2 noautodbgsym ${DEB_BUILD_OPTIONS:-}"

# build NAME VERSION OPTIONS: builds the tree in $work/NAME (VERSION: the changelog's
# top version instead of its own, if not empty) and leaves the .debs and .changes there.
build() {
	local name=$1 version=$2 opts=$3
	local src=$work/$name/fw-helperd
	local buildlog=$out/$name-build.log
	mkdir -p "$src"
	git -C "$top" archive "$tree" | tar -x -C "$src"
	if [ -n "$version" ]; then
		sed -i "1s/^fw-helperd ([^)]*)/fw-helperd ($version)/" "$src/debian/changelog"
	fi
	log "$name: dpkg-buildpackage $(dpkg-parsechangelog -l "$src/debian/changelog" -S Version) (log: $buildlog)"
	if ! (cd "$src" && DEB_BUILD_OPTIONS=$opts dpkg-buildpackage -us -uc -b) >"$buildlog" 2>&1; then
		tail -n 30 "$buildlog" >&2
		log "$name: dpkg-buildpackage failed"
		return 1
	fi
}

mkdir -p "$out"
out=$(cd "$out" && pwd)
# Only what this script makes: --out may name a directory that holds other files.
rm -f "$out"/fw-helperd_*.deb "$out"/fwh-cache-dkms_*.deb "$out"/prev/*.deb
rmdir "$out/prev" 2>/dev/null || true

build current "" "$base_opts"
changes=$(echo "$work"/current/*.changes)
log "lintian $(basename "$changes")"
# Errors fail the build; warnings and the rest are shown (overrides: debian/*.lintian-overrides).
lintian_opts=(--fail-on error --display-info)
# Our own packages: root (which run-all.sh is) unpacking them is no risk.
[ "$(id -u)" -ne 0 ] || lintian_opts+=(--allow-root)
if ! lintian "${lintian_opts[@]}" "$changes" | tee "$out/lintian.log" >&2; then
	log "lintian reported errors"
	exit 1
fi

if [ -n "$with_prev" ]; then
	build prev "$prev_version" "$base_opts nocheck"
	mkdir -p "$out/prev"
	cp "$work"/prev/*.deb "$out/prev/"
fi

cp "$work"/current/*.deb "$out/"
ls -1 "$out"/fw-helperd_*.deb "$out"/fwh-cache-dkms_*.deb
[ -z "$with_prev" ] || ls -1 "$out"/prev/*.deb
