#!/bin/sh
# SPDX-License-Identifier: MIT
# Upgrade from the previous build while requests flow: prev/ installed, start a
# loop of requests served from /srv/firmware, dpkg -i the current .debs in the
# middle of it; every request succeeds, none takes 5 s or more (nothing waited
# for the kernel's 60 s timeout), and the new version runs.
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/pkg.sh
need_debs
ls "$FWH_DEBS"/prev/fw-helperd_*.deb >/dev/null 2>&1 || skip "no previous build (debs/prev/) in the payload"

# 42-pkg-reinstall leaves the previous build installed; else install it.
prev_version=$(dpkg-deb -f "$(ls "$FWH_DEBS"/prev/fw-helperd_*.deb)" Version)
if [ "$(dpkg-query -W -f '${Version}' fw-helperd 2>/dev/null)" != "$prev_version" ]; then
	[ "$(pkg_status fw-helperd)" = not-installed ] || dpkg_op -P fw-helperd fwh-cache-dkms
	dpkg_install "$FWH_DEBS/prev"
	set_dropin 50-srv.conf '[Firmware]\nSearchPath=/srv/firmware\n'
	systemctl restart fw-helperd.service
fi
prev=$(dpkg-query -W -f '${Version}' fw-helperd)
wait_active fw-helperd.service
setup_test_firmware_stock
make_blob 20000 "$FWH_FW_DIR/fwh-upgrade.bin"
assert_answered fwh-upgrade.bin served "request under $prev"

# The loop: one request after another until told to stop, one line each.
loop_log=$FWH_CASE_TMP/loop
stop=$FWH_CASE_TMP/stop
(
	while [ ! -e "$stop" ]; do
		answer fwh-upgrade.bin
	done
) >"$loop_log" 2>&1 &
loop=$!
at_exit "touch $stop; wait $loop 2>/dev/null"
wait_until 30 test -s "$loop_log" || fail "no request of the loop finished"

dpkg_install "$FWH_DEBS"
sleep 3
touch "$stop"
wait "$loop"

cur=$(dpkg-query -W -f '${Version}' fw-helperd)
n=$(wc -l <"$loop_log")
info "$prev -> $cur: $n requests in the loop, slowest $(sort -k2 -n "$loop_log" | tail -n1 | cut -d' ' -f2) ms"
[ "$n" -ge 3 ] || fail "only $n requests ran across the upgrade"
grep -v '^served ' "$loop_log" && fail "requests failed during the upgrade"
awk '$2 >= 5000 { print "slow: " $0; bad = 1 } END { exit bad }' "$loop_log" || fail "a request took 5 s or more"
[ "$cur" != "$prev" ] || fail "still version $prev"
wait_active fw-helperd.service
pid=$(systemctl show -P MainPID fw-helperd.service)
# The running binary is the one the current package installed.
ls -l "/proc/$pid/exe" | grep -q '(deleted)' && fail "fw-helperd still runs the binary of $prev"
assert_answered fwh-upgrade.bin served "request under $cur"
