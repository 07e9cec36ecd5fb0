#!/bin/sh
# Requests pending before the daemon starts are answered by its start-up scan.
. "$(dirname "$0")/../daemon.sh"
fwh_setup
echo 60 > /sys/class/firmware/timeout
blob "$SRV/cold.bin" 12345

# Keep the udev rule from handing the request to the guard (which would start the daemon)
# while we queue it.
trap answers_again EXIT
systemctl stop fw-helperd
nobody_answers
( request cold.bin; echo $? > /tmp/cold.status ) &
for _ in $(seq 100); do [ -e /sys/class/firmware/cold.bin/loading ] && break; sleep 0.1; done
[ -e /sys/class/firmware/cold.bin/loading ] || fail "request never appeared in sysfs"
sleep 1
[ -e /tmp/cold.status ] && fail "request finished with nobody answering"
answers_again
fwh_restart start
wait
[ "$(cat /tmp/cold.status)" = 0 ] || fail "pending request not answered after start"
cmp -s /dev/test_firmware "$SRV/cold.bin" || fail "coldplugged request got wrong bytes"
rm -f /tmp/cold.status "$SRV/cold.bin"
