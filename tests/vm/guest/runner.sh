#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Runs the selected cases and reports TAP-ish lines on the second serial
# port, which the host reads back as result.log:
#
#   ok N - NAME | not ok N - NAME | ok N - NAME # SKIP reason
#   # lines: details (case output and journal on failure, timings)
#   # done   (the last line; missing = the guest died or hung)
#
# Reboots (disk bed only): a case that exits 75 (reboot_then_continue in
# lib.sh) is run again after a reboot, with FWH_BOOT one higher. The reboot
# waits until every selected case of the same decade (first digit of the
# name) has had its turn, so cases that each need one share it. The runner
# keeps its place in $state, writes the current /boot/initrd.img-$(uname -r)
# to the exchange disk, reports "# reboot initrd SIZE" and powers off; the
# host boots the same disk again with that initrd, and the runner goes on
# with "# boot N: ..." instead of the header.
#
# Kernel command line:
#   fwh.cases=GLOB[,GLOB...]  case names to run (default: all)
#   fwh.case_timeout=SECONDS  per case (default 300)
#   fwh.first=N               number of the first case reported (default 1)
#   fwh.keep=1                 do not power off; leave a root shell on ttyS0
#   fwh.bed=disk               the disk bed (FWH_BED for the cases)
set -u
set -f                          # globs from the command line stay patterns

dir=/usr/lib/fwh-vmtest
logdir=/run/fwh-vmtest
# Survives a reboot on the disk bed (the fast bed's root is RAM).
statedir=/var/lib/fwh-vmtest
state=$statedir/runner.state
exchange=/dev/disk/by-id/virtio-fwh-exchange
report_tty=/dev/ttyS1

cmdline_param() { # NAME DEFAULT
	for w in $(cat /proc/cmdline); do
		case "$w" in "fwh.$1="*) echo "${w#*=}"; return ;; esac
	done
	echo "$2"
}

cases_glob=$(cmdline_param cases '*')
case_timeout=$(cmdline_param case_timeout 300)
keep=$(cmdline_param keep 0)
export FWH_BED
FWH_BED=$(cmdline_param bed fast)

# Raw: no \n -> \r\n translation, nothing echoed back into the stream.
stty -F "$report_tty" raw -echo 2>/dev/null
exec 3>"$report_tty"
report() { printf '%s\n' "$*" >&3; }
report_file() { # PREFIX FILE: every line of FILE as a "# " comment
	sed "s/^/# $1/" "$2" >&3
}

finish() {
	report "# done"
	exec 3>&-               # closing a tty waits for its output to drain
	sync
	if [ "$keep" = 1 ]; then
		echo "fwh-vmtest: cases done; root shell on ttyS0 (poweroff to quit)" >/dev/ttyS0
		setsid -c /bin/bash -l </dev/ttyS0 >/dev/ttyS0 2>&1
	fi
	sleep 0.2
	echo o >/proc/sysrq-trigger
}

selected() { # NAME
	old_ifs=$IFS IFS=,
	for g in $cases_glob; do
		IFS=$old_ifs
		# shellcheck disable=SC2254
		case "$1" in $g) return 0 ;; esac
	done
	IFS=$old_ifs
	return 1
}

# reboot_now: keep our place, hand the current initrd to the host, power
# off cleanly (the next boot must find what a real shutdown leaves).
reboot_now() {
	{
		echo "n=$n"
		echo "vm_boot=$vm_boot"
		echo "todo='$todo'"
		echo "pending='$pending'"
	} >"$state.tmp"
	mv "$state.tmp" "$state"
	initrd=/boot/initrd.img-$(uname -r)
	size=$(stat -c %s "$initrd")
	if ! dd if="$initrd" of="$exchange" bs=1M conv=fsync status=none; then
		rm -f "$state"
		report "not ok $((n + 1)) - reboot: cannot write $initrd to $exchange"
		finish
		exit
	fi
	report "# reboot initrd $size"
	exec 3>&-
	sync
	systemctl poweroff
	exit
}

# run_case FILE PHASE: one run of a case; reports its result unless it asks
# for a reboot (then it joins $pending).
run_case() {
	f=$1
	name=${f%.*}
	log=$logdir/$name.log
	export FWH_CASE=$name FWH_CASE_TMP=$logdir/tmp/$name FWH_BOOT=$2
	export FWH_CASE_STATE=$statedir/cases/$name
	rm -rf "$FWH_CASE_TMP"
	mkdir -p "$FWH_CASE_TMP" "$FWH_CASE_STATE"
	t0=$(date +%s%N)
	echo "fwh-vmtest: starting $name (boot $2)" >/dev/kmsg
	(cd "$FWH_CASE_TMP" && exec timeout -k 10 "$case_timeout" "$dir/cases/$f") \
		</dev/null >"$log" 2>&1
	rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	echo "fwh-vmtest: $name exited $rc after ${ms}ms" >/dev/kmsg
	if [ $rc = 75 ] && [ "$FWH_BED" = disk ]; then
		pending="$pending $f:$(($2 + 1))"
		report "# $name: reboot requested after ${ms}ms"
		# Shown again if the case fails after the reboot.
		cp "$log" "$FWH_CASE_STATE/boot-$2.log"
		rm -rf "$FWH_CASE_TMP"
		return
	fi
	n=$((n + 1))
	# Passing cases' output too (the host shows it only for failures, but
	# keeps it in result.txt: benchmarks print their figures).
	case $rc in
	0)
		report "ok $n - $name"
		report_file "" "$log" ;;
	77)
		reason=$(sed -n 's/^SKIP: //p' "$log" | tail -n1)
		report "ok $n - $name # SKIP ${reason:-no reason given}" ;;
	*)
		report "not ok $n - $name"
		[ $rc -eq 124 ] && report "# timed out after ${case_timeout}s"
		report "# exit status $rc"
		report "# ---- output"
		for b in $(cd "$FWH_CASE_STATE" && set +f && ls boot-*.log 2>/dev/null | sort -V); do
			report "# (${b%.log}, before its reboot)"
			report_file "" "$FWH_CASE_STATE/$b"
			report "# (boot $2)"
		done
		report_file "" "$log"
		report "# ---- journal"
		journalctl -b -o short-monotonic -n 150 --no-pager >"$logdir/$name.journal" 2>&1
		report_file "" "$logdir/$name.journal"
		report "# ----" ;;
	esac
	# A case's blobs must not crowd out the cases after it.
	rm -rf "$FWH_CASE_TMP" "$FWH_CASE_STATE"
	report "# time $name ${ms}ms, root $(df -P / | awk 'NR == 2 { print $5 }') used after"
}

mkdir -p "$logdir" "$statedir"
uptime_s=$(cut -d' ' -f1 /proc/uptime)
if [ -f "$state" ]; then
	# A boot the runner asked for: go on where it stopped.
	. "$state"
	rm -f "$state"
	vm_boot=$((vm_boot + 1))
	state_now=$(timeout 120 systemctl is-system-running --wait)
	report "# boot $vm_boot: boot-to-runner ${uptime_s}s, state $state_now after $(cut -d' ' -f1 /proc/uptime)s"
	resume=$pending
	pending=
	for p in $resume; do
		run_case "${p%:*}" "${p##*:}"
	done
else
	set +f
	all=$(ls "$dir/cases" 2>/dev/null | LC_ALL=C sort)
	set -f
	todo=
	for f in $all; do
		name=${f%.*}
		selected "$name" || selected "$f" && todo="$todo $f"
	done
	n=$(( $(cmdline_param first 1) - 1 ))
	vm_boot=1
	pending=
	report "# kernel $(uname -r), systemd $(systemctl --version | head -n1 | cut -d' ' -f2)"
	# Cases start on a booted system: the boot transaction may still be
	# finishing units that were queued beside this one.
	state_now=$(timeout 120 systemctl is-system-running --wait)
	report "# boot-to-runner ${uptime_s}s, state $state_now after $(cut -d' ' -f1 /proc/uptime)s"
	report "1..$(echo $todo | wc -w)"
fi

decade() { echo "${1%"${1#?}"}"; }
while [ -n "$(echo $todo)" ]; do
	set -- $todo
	f=$1
	# The next case is of another decade: first the reboot those waiting
	# asked for.
	if [ -n "$pending" ]; then
		set -- $pending
		[ "$(decade "$f")" = "$(decade "$1")" ] || reboot_now
	fi
	set -- $todo
	shift
	todo=$*
	run_case "$f" 1
done
[ -z "$pending" ] || reboot_now

finish
