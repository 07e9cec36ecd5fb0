# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# Helpers for the benchmark cases (tests/vm/cases/90-bench-*, bench/profile/); source
# lib.sh (or module.sh) first.

# bench_only: the case runs only when the kernel command line's fwh.cases= names a
# bench case (bench/run.sh does); a run of every case reports it as skipped.
bench_only() {
	case " $(cat /proc/cmdline) " in
	*" fwh.cases="*bench*) ;;
	*) skip "benchmark: runs only when selected by name (bench/run.sh)" ;;
	esac
}

# stats: numbers on stdin -> "median p99 n" (nearest rank; p99 is the maximum below
# 100 samples); "NA NA 0" for none
stats() {
	sort -n | awk '{ v[NR] = $1 } END {
		if (!NR) { print "NA NA 0"; exit }
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		r = int(0.99 * NR + 0.999999); if (r < 1) r = 1; if (r > NR) r = NR
		printf "%d %d %d\n", m, v[r], NR }'
}
