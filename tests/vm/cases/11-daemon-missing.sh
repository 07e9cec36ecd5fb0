#!/bin/sh
# A name nobody has is answered -1 at once (the kernel's timeout is the failure mode of
# having no helper), with one journal entry listing where it looked.
. "$(dirname "$0")/../daemon.sh"
fwh_setup
echo 30 > /sys/class/firmware/timeout

start=$(now_ms)
request "no/such-firmware.bin" && fail "request for a missing name succeeded"
took=$(( $(now_ms) - start ))
note "missing answered in ${took} ms"
[ "$took" -lt 1000 ] || fail "missing firmware took ${took} ms"
journal_has FIRMWARE=no/such-firmware.bin FW_RESULT=missing FW_TRIED="$SRV/no/such-firmware.bin" \
	|| fail "no missing entry with the paths tried"
fwctl status | grep -q "no/such-firmware.bin" || fail "fwctl status does not list the missing name"
