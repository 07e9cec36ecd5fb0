#!/bin/sh
# An idle daemon wakes for nothing: systemd's watchdog is pinged only while requests are
# in flight or a suspend cycle is under way (WATCHDOG_USEC=0 otherwise). Proven with a
# 4 s watchdog: idle for 12 s, the daemon neither runs once nor gets killed by systemd;
# frozen (SIGSTOP) in the middle of a request, the watchdog is armed and systemd
# replaces it, and the new instance answers the request.
. /usr/lib/fwh-vmtest/fault.sh

DROPIN=/run/systemd/system/fw-helperd.service.d
mkdir -p "$DROPIN"
printf '[Service]\nWatchdogSec=4s\nTimeoutStopSec=2s\n' > "$DROPIN/60-vmtest-watchdog.conf"
# runs last: the daemon of the next case has the shipped watchdog again
at_exit "rm -f $DROPIN/60-vmtest-watchdog.conf; systemctl daemon-reload; systemctl restart $FWH_UNIT"
systemctl daemon-reload
fault_setup
at_exit "rm -f $FWH_FW_DIR/idle.bin $FWH_FW_DIR/idle-big.bin"
make_blob 5000 "$FWH_FW_DIR/idle.bin" 621
pid=$(fwh_pid)
before=$(sched_runs "$pid")
serve idle.bin "$FWH_FW_DIR/idle.bin"
after=$(sched_runs "$pid")
# the count below would be 0 from a reader that counts nothing too
check "answering a request ran the daemon ($((after - before)) runs)" test "$((after - before))" -gt 0
check "the daemon that answered is the one watched" test "$(fwh_pid)" = "$pid"

sleep 1 # the answer's bookkeeping settles
before=$(sched_runs "$pid")
sleep 12
after=$(sched_runs "$pid")
info "idle 12 s: $((after - before)) runs"
check "the idle daemon was not replaced (systemd expected no pings)" test "$(fwh_pid)" = "$pid"
check "the idle daemon did not run ($((after - before)) runs in 12 s)" test "$((after - before))" = 0

# Busy and hung: the watchdog is armed, systemd replaces the daemon.
SIZE=$((64 * 1024 * 1024))
make_blob "$SIZE" big.ref 622
cp big.ref "$FWH_FW_DIR/idle-big.bin"
caught=
for attempt in 1 2 3 4 5; do
	trigger_bg trigger_request idle-big.bin
	if catch_streaming idle-big.bin "$pid" 60; then
		caught=$attempt
		break
	fi
	wait_trigger 60
done
[ -n "$caught" ] || fail "could not catch the daemon while it streamed"
t_stop=$(now_ms)
pid2=$(wait_new_pid "$pid" 30) || { kill -CONT "$pid"; fail "a hung busy daemon was not replaced in 30 s"; }
info "frozen mid-request, PID $pid replaced by PID $pid2 after $(( $(now_ms) - t_stop )) ms"
wait_trigger 60
rc=$?
check "the new instance answered the request (exit $rc)" test "$rc" = 0
check "byte-exact" cmp -s "$FWH_TF_DEV" big.ref
checks_done
