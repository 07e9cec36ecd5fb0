#!/bin/sh
# SIGKILL while fw-helperd streams a 64 MiB image into a request: systemd restarts it
# (Restart=on-failure), the new instance finds the request still open (its start scan, or
# the event that scan has the kernel repeat), starts the load over ("1" discards the
# partial image) and the driver gets every byte. No inhibitor lock
# of the dead instance is left, the new one holds exactly one, and its open files are as
# many as the first instance's at rest.
. /usr/lib/fwh-vmtest/fault.sh

SIZE=$((64 * 1024 * 1024))
FD_SLACK=2
fault_setup
at_exit "rm -f $FWH_FW_DIR/kill-big.bin $FWH_FW_DIR/kill-small.bin"
make_blob "$SIZE" big.ref 501
cp big.ref "$FWH_FW_DIR/kill-big.bin"
make_blob 5000 "$FWH_FW_DIR/kill-small.bin" 502

# The first instance at rest, after one request: its baseline of open files.
serve kill-small.bin "$FWH_FW_DIR/kill-small.bin"
pid1=$(fwh_pid)
sleep 0.5
fd1=$(fwh_fd_count "$pid1")
info "first instance PID $pid1: $fd1 fds, VmRSS $(fwh_rss_kib "$pid1") KiB"

# Freeze the daemon while it loads, then kill it. The load may be over before the
# SIGSTOP lands (a fast guest): then the request was simply served; try again.
caught=
attempt=1
while [ "$attempt" -le 5 ]; do
	journal_mark
	trigger_bg trigger_request kill-big.bin
	if catch_streaming kill-big.bin "$pid1" 60; then
		caught=$attempt
		break
	fi
	wait_trigger 120 || fail "attempt $attempt: kill-big.bin failed before any fault"
	info "attempt $attempt: the load ended before the daemon could be stopped; again"
	attempt=$((attempt + 1))
done
[ -n "$caught" ] || fail "could not catch the daemon while it streamed in $((attempt - 1)) attempts"
info "attempt $caught: PID $pid1 stopped mid-load (loading=1, $(pending_requests | tr '\n' ' ')), SIGKILL"
t_kill=$(now_ms)
kill -KILL "$pid1"
pid2=$(wait_new_pid "$pid1" 30) || fail "fw-helperd was not restarted after SIGKILL"
info "Restart= brought PID $pid2 after $(( $(now_ms) - t_kill )) ms"
wait_trigger 120
rc=$?
info "kill-big.bin: exit $rc, $(( $(now_ms) - t_kill )) ms after the kill"
check "the request survived the kill and was answered" test "$rc" = 0
check "the driver holds all $SIZE bytes, byte-exact" cmp -s "$FWH_TF_DEV" big.ref
[ "$rc" = 0 ] || show_journal _SYSTEMD_UNIT=$FWH_UNIT

wait_journal 20 MESSAGE_ID=$MSG_SERVED FIRMWARE=kill-big.bin
by=$(entry_field _PID MESSAGE_ID=$MSG_SERVED FIRMWARE=kill-big.bin)
size=$(entry_field FW_SIZE MESSAGE_ID=$MSG_SERVED FIRMWARE=kill-big.bin)
check "served by the new instance (PID $by, expected $pid2)" test "$by" = "$pid2"
check "journal: FW_SIZE=$size, expected $SIZE" test "$size" = "$SIZE"
# Its start scan takes the request directly, or (no udev database entry: the dead instance
# had taken it from udev's untagged event) has the kernel repeat its event, through udev.
event=$(entry_field FW_EVENT MESSAGE_ID=$MSG_SERVED FIRMWARE=kill-big.bin)
check "the new instance took the pending request at start (FW_EVENT=$event)" \
	test "$event" = scan -o "$event" = udev -o "$event" = kernel
check "nothing logged as failed or timed out" \
	test -z "$(journal_since_mark MESSAGE_ID=$MSG_FAILED FIRMWARE=kill-big.bin)"
check "no request left open: '$(pending_requests | tr '\n' ' ')'" test -z "$(pending_requests)"

# Locks: the dead instance's went with its fd; the new one takes its own.
wait_at_rest 30 || check_fail "not back at rest: state '$(sleep_state)', locks '$(fwh_locks | tr '\n' ' ')'"
show_locks
not_locked_by() { ! fwh_locks | grep -qx "$1"; }
check "no lock of the killed PID $pid1 left" not_locked_by "$pid1"
check "exactly one fw-helperd delay lock, held by PID $pid2" fwh_lock_held

# Files: serve once more so the new instance has done what the first had, then count.
serve kill-small.bin "$FWH_FW_DIR/kill-small.bin"
sleep 0.5
fd2=$(fwh_fd_count "$pid2")
info "new instance PID $pid2: $fd2 fds, VmRSS $(fwh_rss_kib "$pid2") KiB"
if [ "$fd2" -gt $((fd1 + FD_SLACK)) ]; then
	show_fds "$pid2"
	check_fail "PID $pid2 has $fd2 open files, the first instance $fd1 (slack $FD_SLACK)"
fi
checks_done
