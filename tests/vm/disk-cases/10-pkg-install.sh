#!/bin/sh
# SPDX-License-Identifier: MIT
# dpkg -i of fw-helperd and fwh-cache-dkms on an installed Debian does the whole
# job with no setting made by hand: udev's stub diverted and replaced, the
# fallback switch on, the daemon running, the module built by dkms for the
# running kernel, fwctl answering; one drop-in adds a search path and a request
# is served from it. Leaves the packages installed for the cases after it.
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/pkg.sh
need_debs

# For 40-pkg-remove and 41-pkg-purge: the system before any of it.
cp "$FWH_RULE" "$FWH_PKG_STATE/stock-50-firmware.rules"
file_list >"$FWH_PKG_STATE/files-before-install"
info "before: force_sysfs_fallback=$(cat "$FWH_FORCE"), $FWH_RULE from $(dpkg -S "$FWH_RULE" | cut -d: -f1)"

dpkg_install "$FWH_DEBS"

info "checking the diversion of udev's stub"
dpkg-divert --list '*50-firmware.rules' | tee "$FWH_CASE_TMP/divert"
grep -q 'by fw-helperd$' "$FWH_CASE_TMP/divert" || fail "no diversion of 50-firmware.rules by fw-helperd"
# dpkg -S names both (udev's file list keeps the path it diverted): what
# counts is whose bytes are there.
owners=$(dpkg -S "$FWH_RULE" | grep -v '^diversion' | cut -d: -f1)
info "dpkg -S $FWH_RULE: $owners"
case ", $owners," in *", fw-helperd,"*) ;; *) fail "fw-helperd does not own $FWH_RULE: $owners" ;; esac
assert_true test -f "$FWH_RULE.udev-stub"
dpkg-deb --fsys-tarfile "$(ls "$FWH_DEBS"/fw-helperd_*.deb)" | tar -xO ./lib/udev/rules.d/50-firmware.rules \
	>"$FWH_CASE_TMP/shipped.rules"
assert_files_eq "$FWH_RULE" "$FWH_CASE_TMP/shipped.rules" "$FWH_RULE"

info "checking the fallback switch, the service, dkms, fwctl"
force_is 1
wait_active fw-helperd.service
dkms status fwh_cache | tee "$FWH_CASE_TMP/dkms"
grep -q "$(uname -r).*installed" "$FWH_CASE_TMP/dkms" || fail "dkms has not installed fwh_cache for $(uname -r)"
modinfo -n fwh_cache | grep -q "/lib/modules/$(uname -r)/updates/" \
	|| fail "modinfo fwh_cache: $(modinfo -n fwh_cache 2>&1)"
fwctl status >"$FWH_CASE_TMP/status" 2>&1 || { cat "$FWH_CASE_TMP/status"; fail "fwctl status"; }
sed 's/^/  | /' "$FWH_CASE_TMP/status"

info "a drop-in naming /srv/firmware, then a request for a blob only there"
set_dropin 50-srv.conf '[Firmware]\nSearchPath=/srv/firmware\n'
systemctl reload fw-helperd.service 2>/dev/null || systemctl restart fw-helperd.service
wait_active fw-helperd.service
setup_test_firmware_stock
make_blob 5000 "$FWH_FW_DIR/fwh-pkg.bin"
assert_answered fwh-pkg.bin served
