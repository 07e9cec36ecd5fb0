#!/bin/sh
# A firmware file changes while fw-helperd streams it (the daemon frozen with SIGSTOP at
# that moment, so the change lands mid-load whatever the guest's speed):
# - truncated to half: the request is answered -1, the driver gets nothing, and one
#   "failed" journal entry names the firmware and the file;
# - rewritten in place, same size: likewise (a mix of two versions is never committed);
# - replaced by rename: the version opened goes out whole, byte-exact.
# Asked again afterwards, each name gets the file as it is now: nothing stale is kept.
. /usr/lib/fwh-vmtest/fault.sh

SIZE=$((32 * 1024 * 1024))
fault_setup
at_exit "rm -f $FWH_FW_DIR/shrink-*.bin"
make_blob "$SIZE" v1.ref 511
make_blob "$SIZE" v2.ref 512
head -c $((SIZE / 2)) v1.ref >half.ref

# freeze_mid_load NAME: a request for NAME in the background, the daemon stopped
# mid-load; fails after 5 attempts that all ended before the daemon stopped. The file is
# put back from v1.ref before each attempt. Sets pid.
freeze_mid_load() {
	pid=$(fwh_pid)
	_n=1
	while [ "$_n" -le 5 ]; do
		cp v1.ref "$FWH_FW_DIR/$1"
		journal_mark
		trigger_bg trigger_request "$1"
		catch_streaming "$1" "$pid" 60 && return 0
		wait_trigger 120 || fail "$1: attempt $_n failed before any fault"
		info "$1: attempt $_n ended before the daemon stopped; again"
		_n=$((_n + 1))
	done
	fail "$1: could not catch the daemon mid-load in 5 attempts"
}

# expect_refused NAME: the frozen load goes on, is answered -1 and logged as failed.
expect_refused() {
	kill -CONT "$pid"
	wait_trigger 120
	_rc=$?
	info "$1: trigger exit $_rc"
	check "$1: the driver's request failed (exit $_rc)" test "$_rc" != 0
	readback got
	check "$1: the driver holds no image ($(stat -c %s got) bytes)" test ! -s got
	wait_journal 20 MESSAGE_ID=$MSG_FAILED FIRMWARE="$1"
	journal_since_mark MESSAGE_ID=$MSG_FAILED FIRMWARE="$1" | sed 's/^/  | /'
	check "$1: the failed entry names the file" \
		test "$(entry_field FW_PATH MESSAGE_ID=$MSG_FAILED FIRMWARE="$1")" = "$FWH_FW_DIR/$1"
	check "$1: exactly one failed entry" \
		test "$(journal_since_mark MESSAGE_ID=$MSG_FAILED FIRMWARE="$1" | grep -c .)" = 1
	check "$1: no served entry" test -z "$(journal_since_mark MESSAGE_ID=$MSG_SERVED FIRMWARE="$1")"
	check "$1: the daemon is still the same process" test "$(fwh_pid)" = "$pid"
}

# 1. Truncated to half while streaming.
freeze_mid_load shrink-trunc.bin
truncate -s $((SIZE / 2)) "$FWH_FW_DIR/shrink-trunc.bin"
info "shrink-trunc.bin: truncated to $((SIZE / 2)) bytes mid-load"
expect_refused shrink-trunc.bin

# 2. Rewritten in place, same size, while streaming.
freeze_mid_load shrink-rewrite.bin
dd if=v2.ref of="$FWH_FW_DIR/shrink-rewrite.bin" bs=1M conv=notrunc status=none
info "shrink-rewrite.bin: rewritten in place mid-load"
expect_refused shrink-rewrite.bin

# 3. Replaced by rename while streaming: the daemon holds the old inode.
freeze_mid_load shrink-rename.bin
cp v2.ref "$FWH_FW_DIR/.shrink-rename.new"
mv "$FWH_FW_DIR/.shrink-rename.new" "$FWH_FW_DIR/shrink-rename.bin"
info "shrink-rename.bin: replaced by rename mid-load"
kill -CONT "$pid"
wait_trigger 120
rc=$?
check "shrink-rename.bin: served (exit $rc)" test "$rc" = 0
readback got
if cmp -s got v1.ref; then
	info "shrink-rename.bin: the driver got the version opened, whole"
else
	check_fail "shrink-rename.bin: the driver got $(stat -c %s got) bytes that are not the version opened ($(cmp got v1.ref 2>&1 | head -n1))"
fi

# Asked again, each gets the file as it is now.
assert_served shrink-trunc.bin half.ref
assert_served shrink-rewrite.bin v2.ref
assert_served shrink-rename.bin v2.ref
info "asked again: each served as it is now"
check "no request left open: '$(pending_requests | tr '\n' ' ')'" test -z "$(pending_requests)"
checks_done
