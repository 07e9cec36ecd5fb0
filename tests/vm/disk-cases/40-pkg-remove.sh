#!/bin/sh
# SPDX-License-Identifier: MIT
# dpkg -r gives the system back as stock Debian has it: udev's stub rule
# in place (diversion gone), force_sysfs_fallback back to 0, the service gone;
# with the switch set by hand a request is answered -1 promptly
# (FWH_PROMPT_MS), as udev's own rule answers it.
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/pkg.sh
need_installed

dpkg_op -r fw-helperd fwh-cache-dkms

info "checking udev's stub is back"
assert_eq "$(dpkg-divert --list '*50-firmware.rules')" "" "diversions of 50-firmware.rules"
assert_eq "$(dpkg -S "$FWH_RULE" | cut -d: -f1)" udev "owner of $FWH_RULE"
assert_files_eq "$FWH_RULE" "$FWH_PKG_STATE/stock-50-firmware.rules" "$FWH_RULE"
force_is 0
systemctl cat fw-helperd.service >/dev/null 2>&1 && fail "fw-helperd.service is still there"
pgrep -x fw-helperd >/dev/null && fail "an fw-helperd process is left"
assert_eq "$(pkg_status fw-helperd)" config-files "dpkg status of fw-helperd"
dkms status fwh_cache | grep -q . && fail "dkms still knows fwh_cache: $(dkms status fwh_cache)"

info "the switch on by hand: the stub answers"
setup_test_firmware
assert_answered fwh-missing-removed.bin failed "request after dpkg -r"
