#!/bin/sh
# SPDX-License-Identifier: MIT
# The test bed against the real kernel, with no fw-helperd: the classic
# udev RUN+= helper (peers/firmware.sh) answers test_firmware's fallback
# requests byte-exact, and a missing name fails fast. Also proves the trap
# every helper must handle: Debian's 50-firmware.rules aborts each request
# at once unless masked.
. /usr/lib/fwh-vmtest/lib.sh

rule='SUBSYSTEM=="firmware", ACTION=="add", RUN+="/usr/lib/fwh-vmtest/peers/firmware.sh"'
stub=/lib/udev/rules.d/50-firmware.rules

# The bed without the product: fw-helperd (if installed) would answer
# first, and its udev rule masks the stub this case shows.
without_fw_helperd
setup_test_firmware
# Bounded, and far above any helper's answer time: a wait until this
# timeout is a failure to answer, not slowness.
set_fallback_timeout 30
make_blob 4097 "$FWH_FW_DIR/fwh-bed-4097.bin"
make_blob 1048576 "$FWH_FW_DIR/fwh-bed-1m.bin" 7

assert_true grep -q 'ATTR{loading}="-1"' "$stub"
install_udev_rule 60-fwh-bed-peer.rules "$rule"

# 1. The trap: with Debian's stub active, the request fails although the
# helper has the file, and long before the fallback timeout.
ms=$(trigger_ms fwh-bed-4097.bin) && fail "request succeeded with $stub active"
info "unmasked: request aborted after ${ms}ms"
assert_lt "$ms" 10000 "ms until the stub aborted the request"

# 2. Masked: the helper serves, byte-exact.
mask_udev_firmware_rule
ms=$(trigger_ms fwh-bed-4097.bin) || fail "4097-byte request failed (${ms}ms)"
readback "$FWH_CASE_TMP/rb"
assert_files_eq "$FWH_CASE_TMP/rb" "$FWH_FW_DIR/fwh-bed-4097.bin" "4097-byte blob"
info "4097 bytes served in ${ms}ms"

ms=$(trigger_ms fwh-bed-1m.bin) || fail "1 MiB request failed (${ms}ms)"
readback "$FWH_CASE_TMP/rb"
assert_files_eq "$FWH_CASE_TMP/rb" "$FWH_FW_DIR/fwh-bed-1m.bin" "1 MiB blob"
info "1 MiB served in ${ms}ms"

# 3. A name the helper does not have: answered -1, not left to time out.
ms=$(trigger_ms fwh-bed-missing.bin) && fail "missing firmware reported loaded"
info "missing: failed after ${ms}ms"
assert_lt "$ms" 10000 "ms until the missing request failed"
assert_eq "$(pending_requests)" "" "requests left pending"
