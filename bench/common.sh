# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2034 # $series is for the script that sources this
# Sourced by bench/run.sh and bench/profile.sh: sets $here, $repo and, from the
# arguments, $series (--kernel 6.1|6.12); -h prints the script's header comment.

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
