#!/bin/sh
# The cases of the kernel's tools/testing/selftests/firmware/fw_fallback.sh that apply
# with a helper running: timeout, wrong file, cancel, SIGCHLD.
. "$(dirname "$0")/../daemon.sh"
fwh_setup
echo "ABCD0123" > "$SRV/test-firmware.bin"

# timeout: a name nobody has fails (here at once, not after the timeout).
echo 1 > /sys/class/firmware/timeout
request nope-test-firmware.bin && fail "missing name succeeded"
cmp -s /dev/test_firmware "$SRV/test-firmware.bin" && fail "stale firmware matched"

# wrong file: the helper serves the named file, not another.
echo 4 > /sys/class/firmware/timeout
echo "something else" > "$SRV/other.bin"
expect_served test-firmware.bin "$SRV/test-firmware.bin"
cmp -s /dev/test_firmware "$SRV/other.bin" && fail "served the wrong file"

# cancel: someone else aborts the request while the helper is away; the driver sees the
# error and the daemon logs that the request went away, no crash.
trap answers_again EXIT
systemctl stop fw-helperd
nobody_answers
( request test-firmware.bin; echo $? > /tmp/cancel.status ) &
for _ in $(seq 100); do [ -e "$TF/test-firmware.bin/loading" ] && break; sleep 0.1; done
echo -1 > "$TF/test-firmware.bin/loading"
wait
[ "$(cat /tmp/cancel.status)" != 0 ] || fail "cancelled request succeeded"
answers_again
fwh_restart start

# SIGCHLD: a child exiting in the waiting process does not break the request.
( sleep 0.2 & printf test-firmware.bin > "$TF/trigger_request"; echo $? > /tmp/sigchld.status ) 
[ "$(cat /tmp/sigchld.status)" = 0 ] || fail "request with SIGCHLD failed"
cmp -s /dev/test_firmware "$SRV/test-firmware.bin" || fail "SIGCHLD case got wrong bytes"
systemctl is-active -q fw-helperd || fail "daemon died"
echo 10 > /sys/class/firmware/timeout
rm -f /tmp/*.status "$SRV/test-firmware.bin" "$SRV/other.bin"
