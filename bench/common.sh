# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034 # $series is for the script that sources this
# Sourced by bench/run.sh, bench/profile.sh, bench/phases.sh and bench/calls.sh: sets $here,
# $repo and, from the arguments, $series (--kernel 6.1|6.12); -h prints the script's header
# comment.

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
series=6.1
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) series=${2:?}; shift ;;
	--kernel=*) series=${1#*=} ;;
	-h|--help) sed -n '4,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) echo "usage: $0 [--kernel 6.1|6.12]" >&2; exit 2 ;;
	esac
	shift
done
export FWH_VM_BUILDDIR=${FWH_VM_BUILDDIR:-$repo/build-bench}

# extra_case PROG CASE: the bed is to run bench/profile/CASE.sh, with bench/PROG.c built
# static among its peers (/usr/lib/fwh-vmtest/peers/PROG in the guest): both in a temporary
# directory, removed on exit, handed over as FWH_VM_EXTRA_CASES and FWH_VM_EXTRA_PEERS.
extra_case() {
	cases=$(mktemp -d)
	trap 'rm -rf "$cases"' EXIT
	mkdir -p "$cases/peers"
	gcc -static -O2 -Wall -o "$cases/peers/$1" "$here/$1.c"
	cp "$here/profile/$2.sh" "$cases/"
	export FWH_VM_EXTRA_CASES=$cases FWH_VM_EXTRA_PEERS="$cases/peers/*"
}

# vm_boot KIND FILE CASES: boots the test bed on $series for CASES, its logs under
# $FWH_VM_BUILDDIR/KIND-logs/; sets $run, the boot's directory, which must hold FILE
# (else this exits), and $rc, the test bed's status.
vm_boot() {
	local logs
	logs=$FWH_VM_BUILDDIR/$1-logs/$(date +%Y%m%d-%H%M%S)-$series-$$
	mkdir -p "$logs"
	rc=0
	FWH_VM_LOGDIR=$logs "$repo/tests/vm/run.sh" --kernel "$series" --cases "$3" || rc=$?
	run=$(ls -d "$logs"/*/ 2>/dev/null | head -n 1)
	[ -n "$run" ] && [ -f "$run/$2" ] || { echo "$1: no $2 under $logs" >&2; exit 1; }
}
