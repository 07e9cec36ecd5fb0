#!/bin/sh
# SPDX-License-Identifier: MIT
# Installing again after a purge works like the first time: the service runs
# and a request is served from a drop-in's search path.
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/pkg.sh
need_debs
assert_eq "$(pkg_status fw-helperd)" not-installed "dpkg status of fw-helperd before"

dpkg_install "$FWH_DEBS"
force_is 1
wait_active fw-helperd.service
dkms status fwh_cache | grep -q "$(uname -r).*installed" || fail "dkms: $(dkms status fwh_cache)"
set_dropin 50-srv.conf '[Firmware]\nSearchPath=/srv/firmware\n'
systemctl restart fw-helperd.service
wait_active fw-helperd.service
setup_test_firmware_stock
make_blob 4097 "$FWH_FW_DIR/fwh-reinstall.bin"
assert_answered fwh-reinstall.bin served 1000
