#!/bin/sh
# SPDX-License-Identifier: MIT
# Never a stall (a): the daemon started with no system bus still serves within
# 1 s; once the bus is back, fwctl reaches it again within a few seconds.
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/pkg.sh
need_installed
setup_test_firmware_stock
make_blob 3000 "$FWH_FW_DIR/fwh-nobus.bin"

at_exit 'systemctl start dbus.socket dbus.service; systemctl restart fw-helperd.service'
info "stopping dbus.socket and dbus.service, restarting fw-helperd"
systemctl stop dbus.socket dbus.service
systemctl restart fw-helperd.service
sleep 1
info "fw-helperd: $(systemctl is-active fw-helperd.service)"
assert_answered fwh-nobus.bin served "request with no system bus"

info "bus back"
systemctl start dbus.socket dbus.service
t0=$(now_ms)
wait_until 10 sh -c 'fwctl status >/dev/null 2>&1' || fail "fwctl status fails 10 s after dbus came back"
info "fwctl status works $(( $(now_ms) - t0 )) ms after dbus came back"
assert_answered fwh-nobus.bin served "request with the bus back"
