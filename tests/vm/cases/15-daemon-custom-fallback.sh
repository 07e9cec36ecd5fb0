#!/bin/sh
# request_firmware_nowait(..., uevent=false) sends no uevent; a rescan finds it.
# A name of its own: the kernel refuses a no-uevent request (-EOPNOTSUPP) for a name the
# device has cached from an earlier uevent request (fw_cache_is_setup()).
. "$(dirname "$0")/../daemon.sh"
fwh_setup
blob "$SRV/custom-nouevent.bin" 4097

custom_request custom-nouevent.bin /tmp/custom.status
fwctl rescan || fail "fwctl rescan failed"
wait_status /tmp/custom.status
[ "$(cat /tmp/custom.status)" = 0 ] || fail "custom fallback not answered"
wait
# trigger_custom_fallback keeps the blob in test_firmware's buffer like trigger_request
cmp -s /dev/test_firmware "$SRV/custom-nouevent.bin" || fail "custom fallback got wrong bytes"
rm -f /tmp/custom.status "$SRV/custom-nouevent.bin"
