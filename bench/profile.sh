#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/profile.sh [--kernel 6.1|6.12]
#
# Where the time of a small request goes: boots the VM test bed with
# bench/profile/91-profile-requests.sh, which runs fw-helperd as shipped under
# `perf record -a -g` for a series of 4 KiB and missing-firmware requests and
# prints the CPU share of every process, fw-helperd's hottest symbols and the
# driver's wait against the daemon's own FW_DURATION_USEC.
#
# The guest has no perf: the host's (Debian's linux-perf) is carried in with
# the shared libraries it needs beyond libc, in a tar next to the case.
#
#   FWH_VM_BUILDDIR   build dir (default build-bench)
set -euo pipefail

# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

perf=$(command -v perf) || { echo "profile: needs perf on the host (apt install linux-perf)" >&2; exit 1; }
perf=$(readlink -f "$perf")
# Debian's /usr/bin/perf may be a wrapper script that picks perf_<version>
if ! file -b "$perf" | grep -q ELF; then
	perf=$(ls /usr/bin/perf_* 2>/dev/null | sort -V | tail -n 1)
	[ -n "$perf" ] || { echo "profile: no perf binary found" >&2; exit 1; }
fi

cases=$(mktemp -d)
trap 'rm -rf "$cases"' EXIT
bundle=$cases/bundle
mkdir -p "$bundle/lib"
cp -L "$perf" "$bundle/perf"
# the guest has the same Debian release: libc and its close kin are there already
ldd "$perf" | awk '/=> \// { print $3 }' | while read -r lib; do
	case ${lib##*/} in
	libc.so.*|libm.so.*|libgcc_s.so.*|ld-linux*) ;;
	*) cp -L "$lib" "$bundle/lib/" ;;
	esac
done
tar -C "$bundle" -cf "$cases/perf-bundle.tar" .
rm -rf "$bundle"
cp "$here/profile/91-profile-requests.sh" "$cases/"

export FWH_VM_EXTRA_CASES=$cases
vm_boot profile result.txt 91-profile-requests
sed -n '/^\(not \)\{0,1\}ok [0-9]* - 91-profile/,/^# time 91-profile/p' "$run/result.txt" \
	| sed 's/^# \{0,1\}//' | tee "$run/profile.txt"
echo "profile: report in ${run}profile.txt" >&2
exit "$rc"
