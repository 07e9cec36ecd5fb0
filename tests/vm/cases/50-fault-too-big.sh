#!/bin/sh
# A blob larger than the kernel takes: test_firmware's request_firmware_into_buf() gives the
# loader a fixed 1000-byte buffer, and a write into data past its end fails with ENOMEM.
# A 1000-byte blob fits and arrives whole (the path works, the limit is the buffer's); one of
# 1001 bytes and one of 3 MiB are answered -1 at once (long before the kernel's timeout),
# logged as failed with EFBIG and FW_REASON=kernel-refused-size, not as the daemon out of
# memory; the driver gets an error and no image, partial or empty; the daemon serves on.
. /usr/lib/fwh-vmtest/fault.sh

BUF=1000
TIMEOUT=30
fault_setup
[ -w "$FWH_TF/config_into_buf" ] && [ -w "$FWH_TF/config_buf_size" ] \
	|| skip "test_firmware has no request_firmware_into_buf() trigger"
at_exit "echo 1 >$FWH_TF/reset"
at_exit "rm -f $FWH_FW_DIR/into-*.bin"
make_blob "$BUF" "$FWH_FW_DIR/into-fits.bin" 711
make_blob $((BUF + 1)) "$FWH_FW_DIR/into-over.bin" 712
make_blob $((3 * 1024 * 1024)) "$FWH_FW_DIR/into-huge.bin" 713
make_blob 5000 "$FWH_FW_DIR/into-after.bin" 714
pid=$(fwh_pid)
set_fallback_timeout "$TIMEOUT"

# into_buf NAME: one request_firmware_into_buf(NAME) of a BUF-byte buffer (a batch of one);
# sets rc (test_firmware's test_result: 0 or -errno) and ms; the image is left in got.
into_buf() {
	echo 1 >"$FWH_TF/reset"
	echo 1 >"$FWH_TF/config_into_buf"
	echo "$BUF" >"$FWH_TF/config_buf_size"
	echo 1 >"$FWH_TF/config_num_requests"
	echo 0 >"$FWH_TF/config_read_fw_idx" # reset keeps what an earlier case set
	printf '%s' "$1" >"$FWH_TF/config_name"
	t0=$(now_ms)
	echo 1 >"$FWH_TF/trigger_batched_requests" || fail "trigger_batched_requests for $1"
	ms=$(( $(now_ms) - t0 ))
	rc=$(cat "$FWH_TF/test_result")
	rm -f got
	cat "$FWH_TF/read_firmware" >got 2>/dev/null
	echo 1 >"$FWH_TF/release_all_firmware"
	info "$1: test_result $rc after $ms ms, $(stat -c %s got) bytes received"
}

journal_mark
into_buf into-fits.bin
check "into-fits.bin: loaded into the driver's buffer (test_result $rc)" test "$rc" = 0
check "into-fits.bin: the driver holds it whole" cmp -s got "$FWH_FW_DIR/into-fits.bin"
wait_journal 10 MESSAGE_ID=$MSG_SERVED FIRMWARE=into-fits.bin

for name in into-over.bin into-huge.bin; do
	journal_mark
	into_buf "$name"
	check "$name: the driver's request failed (test_result $rc)" test "$rc" != 0
	check "$name: the driver holds no image, not even an empty one" test ! -s got
	check "$name: answered at once, not at the kernel's ${TIMEOUT}s timeout ($ms ms)" \
		test "$ms" -lt 10000
	wait_journal 10 MESSAGE_ID=$MSG_FAILED FIRMWARE="$name"
	show_journal _SYSTEMD_UNIT="$FWH_UNIT" FIRMWARE="$name"
	result=$(entry_field FW_RESULT MESSAGE_ID=$MSG_FAILED FIRMWARE="$name")
	reason=$(entry_field FW_REASON MESSAGE_ID=$MSG_FAILED FIRMWARE="$name")
	errno=$(entry_field ERRNO MESSAGE_ID=$MSG_FAILED FIRMWARE="$name")
	message=$(entry_field MESSAGE MESSAGE_ID=$MSG_FAILED FIRMWARE="$name")
	check "$name: logged as failed, got '$result'" test "$result" = failed
	check "$name: FW_REASON=kernel-refused-size, got '$reason'" test "$reason" = kernel-refused-size
	check "$name: ERRNO=27 (EFBIG), not 12 (the daemon out of memory), got '$errno'" \
		test "$errno" = 27
	check "$name: the message says the kernel refused it" \
		sh -c "echo '$message' | grep -q 'refused by the kernel'"
	check "$name: no served entry" \
		test -z "$(journal_since_mark MESSAGE_ID=$MSG_SERVED FIRMWARE="$name")"
	check "$name: no request left open: '$(pending_requests | tr '\n' ' ')'" \
		test -z "$(pending_requests)"
done

serve into-after.bin "$FWH_FW_DIR/into-after.bin"
info "into-after.bin served whole through request_firmware() right after"
check "the daemon is the same process (PID $pid)" test "$(fwh_pid)" = "$pid"
checks_done
