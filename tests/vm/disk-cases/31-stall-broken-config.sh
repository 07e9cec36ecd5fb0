#!/bin/sh
# SPDX-License-Identifier: MIT
# Never a stall (b): with a broken configuration drop-in the daemon refuses to
# start (exit status 78, EX_CONFIG), and a request is answered -1 promptly
# (FWH_PROMPT_MS) rather than left to the kernel's timeout. Broken means a value the daemon
# refuses (Workers=0): an unknown key such as [Firmware] Bogus=1 is only
# warned about and ignored, as systemd does (fw-helperd-conf.c).
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/pkg.sh
need_installed
setup_test_firmware_stock

at_exit "rm -f $FWH_DROPIN_DIR/99-broken.conf; systemctl reset-failed fw-helperd.service; systemctl restart fw-helperd.service"
set_dropin 99-broken.conf '[Service]\nWorkers=0\n'
info "drop-in [Service] Workers=0, restarting fw-helperd"
systemctl restart fw-helperd.service 2>/dev/null || true
wait_until 10 sh -c '! systemctl is-active -q fw-helperd.service' || fail "fw-helperd runs with a broken drop-in"
status=$(systemctl show -P ExecMainStatus fw-helperd.service)
info "fw-helperd: $(systemctl is-active fw-helperd.service), exit status $status"
assert_eq "$status" 78 "exit status of fw-helperd with a broken drop-in"
assert_answered fwh-missing-nocfg.bin failed "request while the daemon cannot start"
