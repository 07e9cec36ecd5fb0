#!/bin/sh
# Requests pending before the daemon starts are answered by its start-up scan.
. "$(dirname "$0")/../daemon.sh"
fwh_setup
echo 60 > /sys/class/firmware/timeout
blob "$SRV/cold.bin" 12345

# Keep udev from starting the daemon on demand while we queue the request.
systemctl stop fw-helperd
systemctl mask --runtime fw-helperd
( request cold.bin; echo $? > /tmp/cold.status ) &
for _ in $(seq 100); do [ -e /sys/class/firmware/cold.bin/loading ] && break; sleep 0.1; done
[ -e /sys/class/firmware/cold.bin/loading ] || fail "request never appeared in sysfs"
sleep 1
[ -e /tmp/cold.status ] && fail "request finished with nobody answering"
systemctl unmask --runtime fw-helperd
systemctl start fw-helperd
wait
[ "$(cat /tmp/cold.status)" = 0 ] || fail "pending request not answered after start"
cmp -s /dev/test_firmware "$SRV/cold.bin" || fail "coldplugged request got wrong bytes"
rm -f /tmp/cold.status "$SRV/cold.bin"
