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
# Kernel command line:
#   fwh.cases=GLOB[,GLOB...]  case names to run (default: all)
#   fwh.case_timeout=SECONDS  per case (default 300)
#   fwh.keep=1                 do not power off; leave a root shell on ttyS0
set -u
set -f                          # globs from the command line stay patterns

dir=/usr/lib/fwh-vmtest
logdir=/run/fwh-vmtest
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

mkdir -p "$logdir"
set +f
all=$(ls "$dir/cases" 2>/dev/null | LC_ALL=C sort)
set -f
todo=
for f in $all; do
	name=${f%.*}
	selected "$name" || selected "$f" && todo="$todo $f"
done

report "# kernel $(uname -r), systemd $(systemctl --version | head -n1 | cut -d' ' -f2)"
uptime_s=$(cut -d' ' -f1 /proc/uptime)
# Cases start on a booted system: the boot transaction may still be
# finishing units that were queued beside this one.
state=$(timeout 120 systemctl is-system-running --wait)
report "# boot-to-runner ${uptime_s}s, state $state after $(cut -d' ' -f1 /proc/uptime)s"
report "1..$(echo $todo | wc -w)"

n=0
for f in $todo; do
	n=$((n + 1))
	name=${f%.*}
	log=$logdir/$name.log
	export FWH_CASE=$name FWH_CASE_TMP=$logdir/tmp/$name
	rm -rf "$FWH_CASE_TMP"
	mkdir -p "$FWH_CASE_TMP"
	t0=$(date +%s%N)
	echo "fwh-vmtest: starting $name" >/dev/kmsg
	(cd "$FWH_CASE_TMP" && exec timeout -k 10 "$case_timeout" "$dir/cases/$f") \
		</dev/null >"$log" 2>&1
	rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	echo "fwh-vmtest: $name exited $rc after ${ms}ms" >/dev/kmsg
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
		report_file "" "$log"
		report "# ---- journal"
		journalctl -b -o short-monotonic -n 150 --no-pager >"$logdir/$name.journal" 2>&1
		report_file "" "$logdir/$name.journal"
		report "# ----" ;;
	esac
	# The guest's root is RAM: a case's blobs must not crowd out the cases after it.
	rm -rf "$FWH_CASE_TMP"
	report "# time $name ${ms}ms, root $(df -P / | awk 'NR == 2 { print $5 }') used after"
done

finish
