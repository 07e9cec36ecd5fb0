#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/run.sh [--kernel 6.1|6.12] [--quick] [--callgrind]
#
# Boots the VM test bed once with only the benchmark case(s)
# (tests/vm/cases/90-bench-*.sh), then prints the tables and goal lines the
# guest reported and writes the machine-readable rows next to the run's logs
# as bench.tsv (columns: workload, peer, metric, value). See bench/README.md.
#
#   --quick       a few small repetitions per workload, to try a case out
#                 (the figures mean nothing)
#   --callgrind   also bench/callgrind.sh on the host: instructions per request
#
#   FWH_VM_BUILDDIR   build dir (default build-bench; module builds, logs)
#   FWH_BENCH_CASES   case globs (default 90-bench-*)
set -euo pipefail

quick=0
callgrind=0
args=()
for a in "$@"; do
	case $a in
	--quick) quick=1 ;;
	--callgrind) callgrind=1 ;;
	*) args+=("$a") ;;
	esac
done
set -- "${args[@]}"
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

# The floor peer (bench/floor.c), static so that it needs nothing in the guest.
peers=$(mktemp -d)
trap 'rm -rf "$peers"' EXIT
gcc -static -O2 -Wall -o "$peers/floor" "$here/floor.c"
if [ $quick = 1 ]; then
	cat >"$peers/bench.env" <<-'EOF'
	REPS_TP=1 REPS_LAT=4 REPS_BURST=1 REPS_MISS=4 ROUNDS_SMALL=2 BURST_N=8 IDLE_S=2
	EOF
fi
export FWH_VM_EXTRA_PEERS="$peers/*"

# One boot runs every workload: allow it to take its time.
export FWH_VM_CASE_TIMEOUT=${FWH_VM_CASE_TIMEOUT:-1500}
export FWH_VM_TIMEOUT=${FWH_VM_TIMEOUT:-1800}

# The case itself only runs when its name is in fwh.cases (a run of all
# cases skips it), which this selection provides.
vm_boot bench result.txt "${FWH_BENCH_CASES:-90-bench-*}"
# The runner prefixes a case's output with "# ".
sed -n 's/^# BENCH\t//p' "$run/result.txt" >"$run/bench.tsv"
{
	sed -n '1,3p' "$run/result.txt"
	sed -n '/^\(not \)\{0,1\}ok [0-9]* - 90-bench/,/^# time 90-bench/p' "$run/result.txt" \
		| grep -v '^# BENCH	' | sed 's/^# \{0,1\}//'
} | tee "$run/bench-table.txt"
echo "bench: $(wc -l <"$run/bench.tsv") rows in ${run}bench.tsv, table in ${run}bench-table.txt" >&2
if [ $callgrind = 1 ]; then
	"$here/callgrind.sh" | tee "$run/callgrind.txt" || rc=$?
fi
exit "$rc"
