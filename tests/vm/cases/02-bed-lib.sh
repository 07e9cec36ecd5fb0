#!/bin/sh
# SPDX-License-Identifier: MIT
# The helpers other cases build on do what lib.sh says, against the real
# kernel and without fw-helperd: the custom fallback (no uevent) answered
# by hand, an abandoned one aborted by wait_trigger, an async request,
# journal marks, blobs.
. /usr/lib/fwh-vmtest/lib.sh

without_fw_helperd
setup_test_firmware
set_fallback_timeout 30
# Nothing may answer uevents here but this case.
mask_udev_firmware_rule

# make_blob: exact size, deterministic, seed-dependent, fast enough.
t0=$(now_ms)
make_blob 16777216 "$FWH_FW_DIR/big.bin"
info "make_blob 16 MiB: $(( $(now_ms) - t0 ))ms"
make_blob 5000 a.bin 1
make_blob 5000 b.bin 1
make_blob 5000 c.bin 2
assert_files_eq a.bin b.bin "same seed"
assert_fails cmp -s a.bin c.bin

# Custom fallback: no uevent, no timeout; answered through its sysfs dir.
make_blob 70000 "$FWH_FW_DIR/custom.bin"
trigger_custom fwh-lib-custom.bin
assert_true wait_until 10 test -e /sys/class/firmware/fwh-lib-custom.bin/loading
assert_eq "$(pending_requests)" fwh-lib-custom.bin "pending requests"
echo 1 >/sys/class/firmware/fwh-lib-custom.bin/loading
cat "$FWH_FW_DIR/custom.bin" >/sys/class/firmware/fwh-lib-custom.bin/data
echo 0 >/sys/class/firmware/fwh-lib-custom.bin/loading
wait_trigger 10 || fail "custom fallback answered but the request failed"
readback rb
assert_files_eq rb "$FWH_FW_DIR/custom.bin" "custom fallback blob"

# A custom request nobody answers: wait_trigger gives up, aborts it, and
# the case can go on (here in a subshell, as fail exits).
trigger_custom fwh-lib-abandoned.bin
( wait_trigger 2 ) 2>/dev/null && fail "unanswered request reported success"
wait "$FWH_TRIGGER_PID" && fail "aborted request reported success"
assert_eq "$(pending_requests)" "" "requests left after the abort"

# Async request with a uevent: answered via the classic peer.
install_udev_rule 60-fwh-lib-peer.rules \
	'SUBSYSTEM=="firmware", ACTION=="add", RUN+="/usr/lib/fwh-vmtest/peers/firmware.sh"'
trigger_async custom.bin || fail "async request failed"
readback rb
assert_files_eq rb "$FWH_FW_DIR/custom.bin" "async blob"

# 16 MiB through the data file.
ms=$(trigger_ms big.bin) || fail "16 MiB request failed"
readback rb
assert_files_eq rb "$FWH_FW_DIR/big.bin" "16 MiB blob"
info "16 MiB via the classic helper: ${ms}ms"

# Journal marks: entries before the mark do not match, later ones do.
logger -t fwh-lib "before"
journal_mark
assert_eq "$(journal_since_mark SYSLOG_IDENTIFIER=fwh-lib | grep -c before)" 0 "entries before the mark"
logger -t fwh-lib "after"
wait_journal 10 SYSLOG_IDENTIFIER=fwh-lib MESSAGE=after

assert_true kernel_at_least 6.1
assert_fails kernel_at_least 99.0
assert_eq "$(as_user id -un)" fwuser "as_user"
