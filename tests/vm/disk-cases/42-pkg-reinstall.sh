#!/bin/sh
# SPDX-License-Identifier: MIT
# Installing again after a purge works like the first time: the service runs,
# dkms builds the module, a request is served from a drop-in's search path.
# It installs the previous build (debs/prev/), which 50-pkg-upgrade then
# upgrades: one dkms build fewer per run (each costs minutes under TCG).
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/pkg.sh
need_debs
ls "$FWH_DEBS"/prev/fw-helperd_*.deb >/dev/null 2>&1 || skip "no previous build (debs/prev/) in the payload"
assert_eq "$(pkg_status fw-helperd)" not-installed "dpkg status of fw-helperd before"

dpkg_install "$FWH_DEBS/prev"
info "installed $(dpkg-query -W -f '${Version}' fw-helperd)"
force_is 1
wait_active fw-helperd.service
dkms status fwh_cache | grep -q "$(uname -r).*installed" || fail "dkms: $(dkms status fwh_cache)"
set_dropin 50-srv.conf '[Firmware]\nSearchPath=/srv/firmware\n'
systemctl restart fw-helperd.service
wait_active fw-helperd.service
setup_test_firmware_stock
make_blob 4097 "$FWH_FW_DIR/fwh-reinstall.bin"
assert_answered fwh-reinstall.bin served
