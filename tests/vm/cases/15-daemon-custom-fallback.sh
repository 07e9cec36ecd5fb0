#!/bin/sh
# request_firmware_nowait(..., uevent=false) sends no uevent; a rescan finds it.
# A name of its own: the kernel refuses a no-uevent request (-EOPNOTSUPP) for a name the
# device has cached from an earlier uevent request (fw_cache_is_setup()).
. "$(dirname "$0")/../daemon.sh"
fwh_setup
blob "$SRV/custom-nouevent.bin" 4097

( printf custom-nouevent.bin > "$TF/trigger_custom_fallback"; echo $? > /tmp/custom.status ) &
for _ in $(seq 100); do [ -e /sys/class/firmware/custom-nouevent.bin/loading ] && break; sleep 0.1; done
[ -e /sys/class/firmware/custom-nouevent.bin/loading ] || fail "custom fallback never appeared"
fwctl rescan || fail "fwctl rescan failed"
for _ in $(seq 100); do [ -e /tmp/custom.status ] && break; sleep 0.1; done
[ "$(cat /tmp/custom.status 2>/dev/null)" = 0 ] || fail "custom fallback not answered"
wait
# trigger_custom_fallback keeps the blob in test_firmware's buffer like trigger_request
cmp -s /dev/test_firmware "$SRV/custom-nouevent.bin" || fail "custom fallback got wrong bytes"
rm -f /tmp/custom.status "$SRV/custom-nouevent.bin"
