#!/bin/sh
# SPDX-License-Identifier: MIT
# Never a stall (d): fw-helperd.service masked and stopped: a request is
# answered -1 promptly (FWH_PROMPT_MS).
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/pkg.sh
need_installed
setup_test_firmware_stock

at_exit 'systemctl unmask fw-helperd.service; systemctl start fw-helperd.service'
info "systemctl mask --now fw-helperd.service"
systemctl mask --now fw-helperd.service
assert_answered fwh-missing-masked.bin failed "request with the unit masked"
