#!/bin/sh
# Many suspend cycles in a row, each prewarming a 4 MiB image a device asked for and
# releasing it after resume: the daemon's memory (VmRSS) and open files after each
# release stay at the first cycle's figures.
. /usr/lib/fwh-vmtest/sleep.sh

CYCLES=${FWH_SLEEP_CYCLES:-8}
SIZE=$((4 * 1024 * 1024))
RSS_SLACK_KIB=1024
sleep_setup "CacheReleaseSec=1s"
at_exit "rm -f $FWH_FW_DIR/many-cycles.bin"

make_blob "$SIZE" "$FWH_FW_DIR/many-cycles.bin" 22
serve many-cycles.bin "$FWH_FW_DIR/many-cycles.bin"
pid=$(fwh_pid)
info "daemon PID $pid before any cycle: VmRSS $(fwh_rss_kib "$pid") KiB, $(fwh_fd_count "$pid") fds"
info "cycle  took_ms  held_bytes  released_bytes  VmRSS_KiB  fds"

i=1
while [ "$i" -le "$CYCLES" ]; do
	journal_mark
	t0=$(now_ms)
	suspend_start
	wait_resumed 90 || fail "cycle $i: did not end within 90 s"
	wait_journal 20 MESSAGE_ID=$MSG_CACHE_RELEASED _SYSTEMD_UNIT=$FWH_UNIT
	wait_at_rest 10 || fail "cycle $i: not back at rest (state '$(sleep_state)', locks: $(fwh_locks | tr '\n' ' '))"
	[ "$(fwh_pid)" = "$pid" ] || fail "cycle $i: the daemon was restarted (PID $pid -> $(fwh_pid))"
	sleep 0.5 # anything transient (a request's files, the registry's temporary) closes
	held=$(entry_field FW_CACHE_BYTES MESSAGE_ID=$MSG_PREWARMED)
	released=$(entry_field FW_CACHE_BYTES MESSAGE_ID=$MSG_CACHE_RELEASED)
	rss=$(fwh_rss_kib "$pid")
	fds=$(fwh_fd_count "$pid")
	printf '%5d  %7d  %10s  %14s  %9d  %3d\n' "$i" $(( $(now_ms) - t0 )) "${held:--}" "${released:--}" "$rss" "$fds"
	check "cycle $i: the image was held ($held bytes) and released ($released bytes)" \
		test "${held:-0}" -ge "$SIZE" -a "${released:-0}" = "${held:-0}"
	if [ "$i" -eq 1 ]; then
		rss0=$rss fds0=$fds
		ls -l "/proc/$pid/fd" | sed -n 's/.* \([0-9]* -> .*\)/\1/p' | sort -n >fds-first.txt
	fi
	i=$((i + 1))
done

info "after $CYCLES cycles: VmRSS $rss KiB (first cycle $rss0 KiB, +$((rss - rss0)) KiB), fds $fds (first cycle $fds0)"
check "VmRSS within ${RSS_SLACK_KIB} KiB of the first cycle's ($rss0 -> $rss KiB)" \
	test "$rss" -le $((rss0 + RSS_SLACK_KIB))
if [ "$fds" -ne "$fds0" ]; then
	ls -l "/proc/$pid/fd" | sed -n 's/.* \([0-9]* -> .*\)/\1/p' | sort -n >fds-last.txt
	diff fds-first.txt fds-last.txt | sed 's/^/  fd| /'
	check_fail "open files: $fds0 after the first cycle, $fds after the last"
fi
check "exactly one fw-helperd sleep delay lock, held by the daemon" fwh_lock_held
checks_done
