#!/bin/sh
# A batch of concurrent requests (test_firmware's batched async triggers) is answered;
# a burst of distinct names is streamed by the workers.
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

# Requests that come together, each for its own name (fwh_test_burst), are streamed by the
# workers side by side; answered one after another on the loop, each would wait for those
# before it (fw-helperd-udev.c: receive_batch()). One alone is answered on the loop. Both
# are told by the daemon's debug lines.
BURST=/sys/devices/platform/fwh_test_burst
N=16
modprobe fwh_test_burst || fail "modprobe fwh_test_burst"
dropin=/run/systemd/system/fw-helperd.service.d/90-vmtest-debug.conf
# shellcheck disable=SC2064 # now: the paths
trap "rm -f '$dropin'; systemctl daemon-reload; systemctl restart fw-helperd; rmmod fwh_test_burst 2>/dev/null; rm -rf '$SRV/crowd'" EXIT
exe=$(systemctl show -p ExecStart --value fw-helperd | sed -n 's/^{ path=\([^ ;]*\) .*/\1/p')
[ -x "$exe" ] || fail "no fw-helperd executable in ExecStart: '$exe'"
mkdir -p "${dropin%/*}"
printf '[Service]\nExecStart=\nExecStart=%s --log-level=debug\n' "$exe" >"$dropin"
systemctl daemon-reload
fwh_restart
i=0
while [ "$i" -lt "$N" ]; do
	blob "$SRV/crowd/$i.bin" 4096
	i=$((i + 1))
done
echo "$N" >"$BURST/count" || fail "burst count $N"
printf crowd/ >"$BURST/trigger" || fail "burst trigger"
for _ in $(seq 100); do
	read -r ok failed pending <"$BURST/results"
	[ "$pending" = 0 ] && break
	sleep 0.1
done
[ "$ok $failed $pending" = "$N 0 0" ] || fail "burst of $N: ok failed pending = $ok $failed $pending"
expect_served crowd/0.bin "$SRV/crowd/0.bin"
lines=$(journalctl -q -b -o cat -u fw-helperd --no-pager | grep 'firmware request crowd/')
on_worker=$(printf '%s\n' "$lines" | grep -c ' on a worker')
note "burst of $N: $on_worker on a worker, $(printf '%s\n' "$lines" | grep -c ' on the loop') on the loop"
[ "$on_worker" -gt 0 ] || fail "every request of the burst was answered on the loop, one after another"
printf '%s\n' "$lines" | tail -n 1 | grep -q 'Answered firmware request crowd/0.bin .* on the loop' \
	|| fail "a request alone was not answered on the loop: $(printf '%s\n' "$lines" | tail -n 1)"
