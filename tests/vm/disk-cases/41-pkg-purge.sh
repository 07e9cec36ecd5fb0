#!/bin/sh
# SPDX-License-Identifier: MIT
# dpkg -P leaves nothing of fw-helperd or fwh-cache-dkms: the file list of the
# root equals the one 10-pkg-install took before installing (paths dpkg and
# systemd keep by design excluded, see file_list in pkg.sh), and the usual
# suspects are checked by name.
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/pkg.sh
[ -f "$FWH_PKG_STATE/files-before-install" ] || fail "no file list from 10-pkg-install"
[ "$(pkg_status fw-helperd)" != not-installed ] || fail "fw-helperd is not there to purge"

# Drop-ins the cases wrote are an administrator's files, which purge rightly
# leaves (and with them /etc/fw-helperd): the test removes its own first.
info "removing the cases' drop-ins: $(ls "$FWH_DROPIN_DIR" 2>/dev/null | tr '\n' ' ')"
rm -f "$FWH_DROPIN_DIR"/*.conf
dpkg_op -P fw-helperd fwh-cache-dkms
assert_eq "$(pkg_status fw-helperd)" not-installed "dpkg status of fw-helperd"
assert_eq "$(pkg_status fwh-cache-dkms)" not-installed "dpkg status of fwh-cache-dkms"

# What the cases themselves put there is not the package's.
rm -rf "$FWH_FW_DIR"
file_list >"$FWH_CASE_TMP/files-after-purge"
diff "$FWH_PKG_STATE/files-before-install" "$FWH_CASE_TMP/files-after-purge" >"$FWH_CASE_TMP/diff" || true
info "file list before install vs after purge: $(grep -c '^[<>]' "$FWH_CASE_TMP/diff") difference(s)"
sed 's/^/  /' "$FWH_CASE_TMP/diff"
for p in /etc/fw-helperd /var/lib/dkms/fwh_cache /run/fw-helperd \
	/etc/udev/rules.d/50-firmware.rules /usr/lib/sysctl.d/50-fw-helperd.conf; do
	[ -e "$p" ] && fail "$p is left after purge"
done
ls /lib/modules/*/updates/dkms/fwh_cache.ko* 2>/dev/null && fail "the module is left under updates/"
assert_eq "$(dpkg-divert --list '*50-firmware.rules')" "" "diversions of 50-firmware.rules"
grep -q '^[<>]' "$FWH_CASE_TMP/diff" && fail "files differ before install and after purge"
info "nothing left"
