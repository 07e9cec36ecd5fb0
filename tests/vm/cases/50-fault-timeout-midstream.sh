#!/bin/sh
# The kernel's timeout fires while fw-helperd streams: the daemon is frozen (SIGSTOP)
# mid-load with a 4 s fallback timeout, the kernel gives up and removes the request, then
# the daemon goes on. The driver gets an error, the daemon logs the request as timed out
# or gone (one entry), commits nothing, keeps running and serves the same name whole
# right after.
. /usr/lib/fwh-vmtest/fault.sh

SIZE=$((64 * 1024 * 1024))
fault_setup
at_exit "rm -f $FWH_FW_DIR/timeout-big.bin"
make_blob "$SIZE" big.ref 591
cp big.ref "$FWH_FW_DIR/timeout-big.bin"
pid=$(fwh_pid)

caught=
attempt=1
while [ "$attempt" -le 5 ]; do
	set_fallback_timeout 4
	journal_mark
	trigger_bg trigger_request timeout-big.bin
	if catch_streaming timeout-big.bin "$pid" 60; then
		caught=$attempt
		break
	fi
	wait_trigger 60
	info "attempt $attempt: the load ended before the daemon could be stopped; again"
	attempt=$((attempt + 1))
done
[ -n "$caught" ] || fail "could not catch the daemon while it streamed in $((attempt - 1)) attempts"
at_exit "kill -CONT $pid"
gone() { [ ! -e /sys/class/firmware/timeout-big.bin ]; }
wait_until 30 gone || fail "the kernel did not time the request out while the daemon was stopped"
info "attempt $caught: the kernel timed the request out while PID $pid was stopped mid-load"
set_fallback_timeout 120
kill -CONT "$pid"
wait_trigger 60
rc=$?
check "the driver's request failed (exit $rc)" test "$rc" != 0

wait_journal 20 MESSAGE_ID=$MSG_FAILED FIRMWARE=timeout-big.bin
journal_since_mark MESSAGE_ID=$MSG_FAILED FIRMWARE=timeout-big.bin | sed 's/^/  | /'
result=$(entry_field FW_RESULT MESSAGE_ID=$MSG_FAILED FIRMWARE=timeout-big.bin)
check "logged as timeout or gone, got '$result'" sh -c "[ '$result' = timeout ] || [ '$result' = gone ]"
check "no served entry for the timed-out request" \
	test -z "$(journal_since_mark MESSAGE_ID=$MSG_SERVED FIRMWARE=timeout-big.bin)"
check "the daemon is the same process (PID $pid)" test "$(fwh_pid)" = "$pid"

serve timeout-big.bin big.ref
info "timeout-big.bin served whole right after"
check "no request left open: '$(pending_requests | tr '\n' ' ')'" test -z "$(pending_requests)"
checks_done
