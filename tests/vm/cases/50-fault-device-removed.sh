#!/bin/sh
# A device unplugged while its firmware request is pending (fwh_test_unplug: the kernel puts
# the request's directory under the device, so it goes with it): once before the daemon looks
# (the daemon frozen from the request to the removal), once while a 48 MiB blob streams (the
# daemon frozen mid-load). Each time the daemon stays the same process, logs the request once,
# as gone with its device (FW_REASON=device-removed) at notice level, not as an error, and
# retries nothing; commits nothing; is back to 0 in flight with the fds it had. The driver
# gets an error at the kernel's timeout, the same name is then served whole to a live
# device, and the kernel logs no Oops or BUG.
. /usr/lib/fwh-vmtest/fault.sh

UNPLUG=/sys/devices/platform/fwh_test_unplug
CHILD=$UNPLUG/fwh_unplug_dev
TIMEOUT=8
SIZE=$((48 * 1024 * 1024))

fault_setup
modprobe fwh_test_unplug 2>/dev/null || skip "fwh_test_unplug is not in this payload"
# a request still pending holds the module: it ends at the kernel's timeout
settled() { ! grep -q '^pending ' "$UNPLUG/result"; }
at_exit "wait_until $((TIMEOUT + 10)) settled; rmmod fwh_test_unplug 2>/dev/null"
at_exit "rm -f $FWH_FW_DIR/unplug-*.bin"
make_blob 100000 "$FWH_FW_DIR/unplug-early.bin" 701
make_blob "$SIZE" big.ref 702
cp big.ref "$FWH_FW_DIR/unplug-big.bin"
pid=$(fwh_pid)
at_exit "kill -CONT $pid 2>/dev/null"
fds0=$(fwh_fd_count "$pid")
failed0=$(fwh_prop Failed)
info "daemon PID $pid, $fds0 fds, Failed=$failed0"
set_fallback_timeout "$TIMEOUT"

result_is() { grep -q "^$1 " "$UNPLUG/result"; }
in_flight_zero() { [ "$(fwh_prop InFlight)" = 0 ]; }
fds_back() { [ "$(fwh_fd_count "$pid")" = "$fds0" ]; }
# daemon_entries NAME: the daemon's journal entries about NAME since the mark
daemon_entries() { journal_since_mark _SYSTEMD_UNIT="$FWH_UNIT" FIRMWARE="$1"; }

# after_removal NAME WHAT: what must hold once the device of the request NAME is gone
after_removal() {
	wait_journal 20 MESSAGE_ID=$MSG_FAILED FIRMWARE="$1"
	daemon_entries "$1" | sed 's/^/  | /'
	result=$(entry_field FW_RESULT MESSAGE_ID=$MSG_FAILED FIRMWARE="$1")
	prio=$(entry_field PRIORITY MESSAGE_ID=$MSG_FAILED FIRMWARE="$1")
	errno=$(entry_field ERRNO MESSAGE_ID=$MSG_FAILED FIRMWARE="$1")
	reason=$(entry_field FW_REASON MESSAGE_ID=$MSG_FAILED FIRMWARE="$1")
	check "$2: logged as gone, got '$result' (ERRNO=$errno)" test "$result" = gone
	check "$2: FW_REASON=device-removed, got '$reason'" test "$reason" = device-removed
	check "$2: at notice level (5), not as an error, got '$prio'" test "$prio" = 5
	check "$2: no served entry" test -z "$(journal_since_mark MESSAGE_ID=$MSG_SERVED FIRMWARE="$1")"
	check "$2: back to 0 in flight" wait_until 10 in_flight_zero
	check "$2: fds back to $fds0 (now $(fwh_fd_count "$pid"))" wait_until 10 fds_back
	# the driver waits for the kernel's timeout: nobody can answer a request whose files are gone
	check "$2: the driver's callback came" wait_until $((TIMEOUT + 15)) settled
	info "$2: driver's result: $(cat "$UNPLUG/result")"
	check "$2: the driver got no image" result_is failed
	n=$(daemon_entries "$1" | grep -c .)
	check "$2: one entry for the request, no retry ($n)" test "$n" = 1
	check "$2: the daemon is the same process (PID $pid)" test "$(fwh_pid)" = "$pid"
	check "$2: no core dumped" test -z "$(journal_since_mark -t systemd-coredump)"
}

## 1. Removed before the daemon looks: frozen from the request until the device is gone.
journal_mark
kill -STOP "$pid"
printf unplug-early.bin >"$UNPLUG/plug" || fail "plug unplug-early.bin"
req=$CHILD/firmware/unplug-early.bin
wait_until 10 test -e "$req/loading" || fail "the request did not appear under the device"
echo 1 >"$UNPLUG/unplug" || fail "unplug"
check "the request's directory went with the device" test ! -e "$req"
kill -CONT "$pid"
after_removal unplug-early.bin "removed before the answer"

## 2. Removed while the blob streams: frozen mid-load, then the device goes.
caught=
attempt=1
while [ "$attempt" -le 5 ]; do
	journal_mark
	printf unplug-big.bin >"$UNPLUG/plug" || fail "plug unplug-big.bin"
	# catch_streaming gives up when this waiter ends: when the driver's callback came
	( wait_until 60 settled ) &
	FWH_TRIGGER_PID=$!
	if catch_streaming unplug-big.bin "$pid" 60; then
		caught=$attempt
		break
	fi
	wait_until 60 settled || fail "the request for unplug-big.bin never completed"
	info "attempt $attempt: the load ended before the daemon could be stopped ($(cat "$UNPLUG/result")); again"
	echo 1 >"$UNPLUG/unplug"
	attempt=$((attempt + 1))
done
[ -n "$caught" ] || fail "could not catch the daemon while it streamed in $((attempt - 1)) attempts"
req=$(readlink -f /sys/class/firmware/unplug-big.bin)
info "attempt $caught: PID $pid stopped mid-load of $req"
echo 1 >"$UNPLUG/unplug" || fail "unplug"
check "the request's directory went with the device" test ! -e "$req"
kill -CONT "$pid"
after_removal unplug-big.bin "removed mid-stream"
kill "$FWH_TRIGGER_PID" 2>/dev/null

## The same name from a live device, once the kernel let go of the removed one.
serve unplug-big.bin big.ref
info "unplug-big.bin served whole to test_firmware right after"
failed1=$(fwh_prop Failed)
check "Failed counted each removal once ($failed0 -> $failed1)" test "$failed1" = $((failed0 + 2))
check "no request left open: '$(pending_requests | tr '\n' ' ')'" test -z "$(pending_requests)"

# 6.1 warns "sysfs group 'power' not found for kobject '<name>'" from device_del() when the
# request ends after its device went: the kernel's own parent-before-child removal, shown.
dmesg | sed -n "/fwh-vmtest: starting $FWH_CASE\( (boot [0-9]*)\)\{0,1\}\$/,\$p" >dmesg.txt
check "the kernel's log of this case was read" \
	grep -q "fallback for: unplug-early.bin" dmesg.txt
grep -E 'WARNING:|sysfs group|kobject' dmesg.txt | sed 's/^/  kernel: /'
check "the kernel logged no Oops or BUG" \
	sh -c "! grep -E 'BUG:|Oops|general protection|refcount_t|list_del corruption' dmesg.txt"
checks_done
