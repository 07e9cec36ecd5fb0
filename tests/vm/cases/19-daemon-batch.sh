#!/bin/sh
# A batch of concurrent requests (test_firmware's batched async triggers) is answered.
. "$(dirname "$0")/../daemon.sh"
fwh_setup
# read_firmware hands back at most one page
blob "$SRV/batch.bin" 3000
printf batch.bin > "$TF/config_name"
echo 32 > "$TF/config_num_requests"
echo 1 > "$TF/trigger_batched_requests_async" || fail "batched async trigger failed"
[ "$(cat "$TF/test_result")" = 0 ] || fail "batched requests: test_result $(cat "$TF/test_result")"
for i in $(seq 0 31); do
	echo "$i" > "$TF/config_read_fw_idx"
	cat "$TF/read_firmware" > /tmp/batch.out 2>/dev/null || fail "read_firmware $i"
	cmp -s /tmp/batch.out "$SRV/batch.bin" || fail "batched request $i got wrong bytes"
done
echo 1 > "$TF/release_all_firmware"
echo 1 > "$TF/reset"
rm -f /tmp/batch.out "$SRV/batch.bin"
