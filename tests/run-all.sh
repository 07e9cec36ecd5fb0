#!/bin/bash
# SPDX-License-Identifier: MIT
# Sets up what is needed and runs every test: unit and host integration (meson), a short
# fuzzing run of every fuzz target, the Debian packages' build with lintian, and the
# real-kernel VM suites on Debian's 6.1 and 6.12: the fast bed (the build in a RAM root)
# and the disk bed (those .debs on an installed Debian).
# Ends with one line "N passed, N failed".
#
#   FWH_SKIP_VM=1      skip the VM suites (quick local runs)
#   FWH_FUZZ_SECONDS   seconds per fuzz target (default 30)
#   FWH_VM_KERNELS     kernel series to boot (default "6.1 6.12")
#   FWH_VM_BEDS        beds to run (default "fast disk")
#   FWH_TIME_BUDGET    minutes the whole run may take (default 85: CI stops at 90); a
#                      disk bed suite (FWH_DISK_BED_MINUTES, default 20, each) starts
#                      only while it still fits, else it is reported as skipped
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
passed=0
failed=0
skipped=0
t_start=$(date +%s)
failures=()

step() { printf '\n=== %s\n' "$*"; }
count() { # count NAME STATUS
	if [ "$2" -eq 0 ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		failures+=("$1")
	fi
}

step "dependencies"
"$top/tests/setup-deps.sh" || { echo "setup-deps failed"; echo "0 passed, 1 failed"; exit 1; }

step "build and meson tests (unit, host)"
if [ ! -d build-test ]; then
	meson setup build-test >/dev/null || { echo "0 passed, 1 failed"; exit 1; }
fi
if ninja -C build-test; then
	meson test -C build-test --print-errorlogs --num-processes 2
	# one count per meson test, read from meson's own log
	# meson names a test "<project>:<suite> / <name>": the result goes first
	while read -r result name; do
		count "meson:$name" "$([ "$result" = OK ] || [ "$result" = SKIP ] && echo 0 || echo 1)"
	done < <(/usr/bin/python3 -c '
import json, sys
for line in open(sys.argv[1]):
    t = json.loads(line)
    print(t["result"], t["name"])' build-test/meson-logs/testlog.json)
else
	count "build" 1
fi

step "fuzzing"
if [ ! -d build-fuzz ]; then
	CC=clang meson setup build-fuzz -Dfuzz=true -Dman=disabled >/dev/null
fi
fuzz_targets="fuzz-name fuzz-conf fuzz-manifest fuzz-uevent"
# shellcheck disable=SC2046 # one argument per target
if ninja -C build-fuzz $(printf 'src/fw-helperd/%s ' $fuzz_targets); then
	for target in $fuzz_targets; do
		corpus=$(mktemp -d)
		seeds="$top/tests/fuzz/$target"
		mkdir -p "$seeds"
		# the kept crashers and seeds run first, as regression inputs
		"build-fuzz/src/fw-helperd/$target" -max_total_time="${FWH_FUZZ_SECONDS:-30}" \
			-max_len=4096 -artifact_prefix="$top/build-fuzz/$target-" "$corpus" "$seeds" 2>&1 \
			| tail -n 3
		status=${PIPESTATUS[0]}
		# a crasher is kept in build-fuzz/; add it to tests/fuzz/<target>/ once fixed
		[ "$status" -eq 0 ] || ls "$top/build-fuzz/$target-"* 2>/dev/null
		count "$target" "$status"
		rm -rf "$corpus"
	done
else
	count "fuzz-build" 1
fi

step "Debian packages (tests/pkg/build.sh)"
# The previous build (build-deb/prev/) is for the VM suite's upgrade test only.
pkg_args=()
[ -n "${FWH_SKIP_VM:-}" ] || pkg_args=(--with-prev)
"$top/tests/pkg/build.sh" "${pkg_args[@]}"
count "deb-build" $?
# The disk bed boots these rather than building its own.
export FWH_VM_DEBS=$top/build-deb

# vm_suite NAME CMD...: one VM run, each of its cases counted from its summary line.
vm_suite() {
	local name=$1 out status line p f
	shift
	out=$(mktemp)
	"$@" 2>&1 | tee "$out"
	status=${PIPESTATUS[0]}
	line=$(grep -E '^vm: [0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
	if [ -n "$line" ]; then
		p=$(echo "$line" | sed -E 's/vm: ([0-9]+) passed.*/\1/')
		f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
		passed=$((passed + p))
		failed=$((failed + f))
		[ "$f" -eq 0 ] || failures+=("$name")
		[ "$status" -eq 0 ] || [ "$f" -ne 0 ] || count "$name (exit $status)" 1
	else
		count "$name (no result)" 1
	fi
	rm -f "$out"
}

if [ -z "${FWH_SKIP_VM:-}" ]; then
	for bed in ${FWH_VM_BEDS:-fast disk}; do
		for k in ${FWH_VM_KERNELS:-6.1 6.12}; do
			case $bed in
			fast)
				step "VM suite on Debian's $k kernel"
				vm_suite "vm-$k" "$top/tests/vm/run.sh" --kernel "$k" ;;
			*)
				step "VM suite, $bed bed, on Debian's $k kernel"
				# Its dkms builds and update-initramfs take minutes under TCG: it runs
				# last, and only while it fits in the time CI gives the whole run.
				spent=$(( ($(date +%s) - t_start) / 60 ))
				if [ $((spent + ${FWH_DISK_BED_MINUTES:-20})) -gt "${FWH_TIME_BUDGET:-85}" ]; then
					echo "skipped: $spent min spent, the $bed bed needs up to ${FWH_DISK_BED_MINUTES:-20} of the ${FWH_TIME_BUDGET:-85} (tests/vm/run.sh --bed $bed --kernel $k runs it alone)"
					skipped=$((skipped + 1))
					continue
				fi
				FWH_VM_TIMEOUT=$(( (${FWH_TIME_BUDGET:-85} - spent) * 60 )) \
					vm_suite "vm-$bed-$k" "$top/tests/vm/run.sh" --bed "$bed" --kernel "$k" ;;
			esac
		done
	done
fi

echo
[ ${#failures[@]} -eq 0 ] || echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
