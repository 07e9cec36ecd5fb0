#!/bin/sh
# SPDX-License-Identifier: MIT
# Never a stall (c): a drop-in that is a symlink to /dev/null (masked, as
# systemd's own drop-ins are) is ignored: the daemon runs and serves.
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/pkg.sh
need_installed
setup_test_firmware_stock
make_blob 3000 "$FWH_FW_DIR/fwh-masked-dropin.bin"

at_exit "rm -f $FWH_DROPIN_DIR/60-masked.conf; systemctl reset-failed fw-helperd.service; systemctl restart fw-helperd.service"
ln -sf /dev/null "$FWH_DROPIN_DIR/60-masked.conf"
info "drop-in 60-masked.conf -> /dev/null, restarting fw-helperd"
systemctl restart fw-helperd.service || true
wait_active fw-helperd.service 10
assert_answered fwh-masked-dropin.bin served
