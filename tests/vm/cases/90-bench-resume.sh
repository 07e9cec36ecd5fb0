#!/bin/sh
# SPDX-License-Identifier: MIT
# Benchmark, not a test: a device that reloads its firmware in its resume callback
# (module/fwh_test_resume.ko; user space is still frozen then), timed by the device
# (resume_usecs) over pm_test=devices cycles, for each place the image can come from:
#   disk          the file still on disk (the direct loader; the physical limit, and
#                 what a machine whose disk is not back yet does not have)
#   kernel-cache  the kernel's own FW_CACHE (the name known from probe, read at suspend)
#   fwh_cache     the companion module's pin, the file gone from disk
#   userspace     the file gone, no pin: what every user-space helper gets (it is frozen)
# Like 90-bench-peers.sh it runs only when selected by name (bench/run.sh).
. /usr/lib/fwh-vmtest/module.sh
. /usr/lib/fwh-vmtest/bench.sh

bench_only
[ -f "$FWH_MODDIR/fwh_test_resume.ko" ] || skip "fwh_test_resume.ko is not in this payload"
grep -qw devices /sys/power/pm_test 2>/dev/null || skip "no pm_test=devices (CONFIG_PM_DEBUG)"

REPS=3
SIZE=1048576
T=/sys/devices/platform/fwh_test_resume
DIR=/lib/firmware/fwh-bench-resume
SOURCES="disk kernel-cache fwh_cache userspace"

at_exit "echo none >/sys/power/pm_test"
at_exit "rm -rf $DIR"
at_exit "rmmod fwh_test_resume 2>/dev/null || :"
load_fwh_cache release_delay_ms=1000
mkdir -p "$DIR"
make_blob "$SIZE" "$FWH_CASE_TMP/resume.bin" 90

row() { printf 'BENCH\t%s\t%s\t%s\t%s\n' "$@"; }

# A name per cycle: the kernel's FW_CACHE keeps what its devices were served for 10 s
# after a resume, and a name it still holds would be a hit whatever the source.
cycle() { # SOURCE NAME
	_name=fwh-bench-resume/$2
	cp "$FWH_CASE_TMP/resume.bin" "/lib/firmware/$_name"
	rmmod fwh_test_resume 2>/dev/null
	if [ "$1" = kernel-cache ]; then
		insmod "$FWH_MODDIR/fwh_test_resume.ko" fw_name="$_name" request_at_probe=1
	else
		insmod "$FWH_MODDIR/fwh_test_resume.ko" fw_name="$_name"
	fi || fail "insmod fwh_test_resume"
	wait_until 5 test -r "$T/resume_count" || fail "$T did not appear"
	case $1 in
	fwh_cache)
		echo "$_name" >"$FWH_FC/cache"
		wait_entry 10 "$_name" "cached $SIZE 0"
		rm -f "/lib/firmware/$_name" ;;
	userspace) rm -f "/lib/firmware/$_name" ;;
	esac
	echo devices >/sys/power/pm_test
	echo mem >/sys/power/state || fail "suspend cycle failed"
	echo none >/sys/power/pm_test
	rm -f "/lib/firmware/$_name"
	# fwh_cache lets go of its pins release_delay_ms after each resume: a pin taken
	# before that would go too
	sleep 1.5
}

for s in $SOURCES; do
	: >"$FWH_CASE_TMP/us"
	failed=0
	for i in $(seq "$REPS"); do
		cycle "$s" "$s-$i.bin"
		if [ "$(cat "$T/resume_error")" = 0 ] && [ "$(cat "$T/resume_size")" = "$SIZE" ]; then
			cat "$T/resume_usecs" >>"$FWH_CASE_TMP/us"
		else
			failed=$((failed + 1))
		fi
	done
	med=$(stats <"$FWH_CASE_TMP/us" | cut -d' ' -f1)
	row resume "$s" us_median "$med"
	row resume "$s" failed "$failed"
	row resume "$s" n "$REPS"
	eval "med_$(echo "$s" | tr -- - _)=\$med failed_$(echo "$s" | tr -- - _)=\$failed"
done

echo
echo "## resume (1 MiB, requested in the device's resume callback; $REPS pm_test cycles each)"
printf '%-13s %12s %8s\n' source "median us" failed
printf '%-13s %12s %8s\n' disk "$med_disk" "$failed_disk/$REPS"
printf '%-13s %12s %8s\n' kernel-cache "$med_kernel_cache" "$failed_kernel_cache/$REPS"
printf '%-13s %12s %8s\n' fwh_cache "$med_fwh_cache" "$failed_fwh_cache/$REPS"
printf '%-13s %12s %8s\n' userspace "$med_userspace" "$failed_userspace/$REPS"
echo "GOAL INFO resume: from fwh_cache $med_fwh_cache us with the file gone, from disk $med_disk us;" \
	"user-space helpers alone: $failed_userspace of $REPS failed"
