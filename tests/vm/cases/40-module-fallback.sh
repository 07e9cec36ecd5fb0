#!/bin/sh
# SPDX-License-Identifier: MIT
#
# A name the direct loader cannot find goes through the kernel's sysfs fallback
# when the kernel runs it (force_sysfs_fallback); this case answers it the way
# fw-helperd would. Then: unload waits for a load still in flight.

. /usr/lib/fwh-vmtest/module.sh

load_fwh_cache
old_force=$(cat "$FWH_FW_CONFIG/force_sysfs_fallback")
old_timeout=$(cat /sys/class/firmware/timeout)
at_exit "echo $old_force >$FWH_FW_CONFIG/force_sysfs_fallback; echo $old_timeout >/sys/class/firmware/timeout"
echo 1 >"$FWH_FW_CONFIG/force_sysfs_fallback"
echo 20 >/sys/class/firmware/timeout
mask_udev_firmware_rule
make_blob 40000 "$FWH_CASE_TMP/userspace-only.bin" 3

info "without forced fallback nothing waits: -ENOENT at once"
echo 0 >"$FWH_FW_CONFIG/force_sysfs_fallback"
echo fwh-test/userspace-only.bin >"$FWH_FC/cache"
wait_entry 10 fwh-test/userspace-only.bin "failed 0 -2"
echo 1 >"$FWH_FW_CONFIG/force_sysfs_fallback"

info "with it, fw-helperd answers the request (when it is installed)"
if systemctl cat fw-helperd >/dev/null 2>&1; then
	mkdir -p /srv/fwh-module/fwh-test /etc/fw-helperd/fw-helperd.conf.d
	cp "$FWH_CASE_TMP/userspace-only.bin" /srv/fwh-module/fwh-test/
	printf '[Firmware]\nSearchPath=/srv/fwh-module\n' \
		>/etc/fw-helperd/fw-helperd.conf.d/90-module-vmtest.conf
	at_exit "rm -rf /srv/fwh-module /etc/fw-helperd/fw-helperd.conf.d/90-module-vmtest.conf"
	systemctl unmask --runtime -q fw-helperd # masked by load_fwh_cache
	systemctl restart fw-helperd
	wait_until 10 systemctl is-active -q fw-helperd || fail "fw-helperd did not start"
	echo fwh-test/userspace-only.bin >"$FWH_FC/cache"
	wait_entry 15 fwh-test/userspace-only.bin "cached 40000 0"
	echo fwh-test/userspace-only.bin >"$FWH_FC/uncache"
else
	info "fw-helperd is not in this payload: only the manual answers below"
fi

info "the request sits below the entry's device; answered by hand here"
if systemctl cat fw-helperd >/dev/null 2>&1; then
	systemctl stop fw-helperd
	systemctl mask --runtime -q fw-helperd
	at_exit "systemctl unmask --runtime -q fw-helperd"
	# fw-helperd's own 50-firmware.rules (in /etc, above the /run mask) would have its
	# guard answer -1 for the masked daemon: this case answers by hand instead
	install_udev_rule 00-fwh-vmtest-by-hand.rules 'SUBSYSTEM=="firmware", ENV{FW_HELPERD_IGNORE}="1"'
fi
echo fwh-test/userspace-only.bin >"$FWH_FC/cache"
req=/sys/class/firmware/fwh-test!userspace-only.bin
wait_until 10 test -e "$req/loading" || fail "no fallback request appeared: $(pending_requests)"
assert_eq "$(entry fwh-test/userspace-only.bin)" "loading 0 0" "entry while pending"
case $(readlink -f "$req") in
/sys/devices/fwh_cache/entry*/firmware/fwh-test!userspace-only.bin) ;;
*) fail "request at $(readlink -f "$req"), not below /sys/devices/fwh_cache" ;;
esac
echo 1 >"$req/loading"
cat "$FWH_CASE_TMP/userspace-only.bin" >"$req/data"
echo 0 >"$req/loading"
wait_entry 10 fwh-test/userspace-only.bin "cached 40000 0"

info "userspace_fallback=1 and no forced fallback: a request without a uevent, answered by hand"
echo 0 >"$FWH_FW_CONFIG/force_sysfs_fallback"
assert_eq "$(cat "$FWH_FC/userspace_fallback")" 0 "userspace_fallback at load"
echo 1 >"$FWH_FC/userspace_fallback"
echo fwh-test/asked.bin >"$FWH_FC/cache"
req=/sys/class/firmware/fwh-test!asked.bin
wait_until 10 test -e "$req/loading" || fail "no custom fallback request appeared: $(pending_requests)"
assert_eq "$(entry fwh-test/asked.bin)" "loading 0 0" "entry while asked"
echo 1 >"$req/loading"
cat "$FWH_CASE_TMP/userspace-only.bin" >"$req/data"
echo 0 >"$req/loading"
wait_entry 10 fwh-test/asked.bin "cached 40000 0"
echo fwh-test/refused.bin >"$FWH_FC/cache"
req=/sys/class/firmware/fwh-test!refused.bin
wait_until 10 test -e "$req/loading" || fail "no custom fallback request for refused.bin"
echo -1 >"$req/loading"
wait_entry 10 fwh-test/refused.bin "failed 0 -2"
info "a file the direct loader finds needs nobody"
mkdir -p /lib/firmware/fwh-test
at_exit "rm -rf /lib/firmware/fwh-test"
cp "$FWH_CASE_TMP/userspace-only.bin" /lib/firmware/fwh-test/direct.bin
echo fwh-test/direct.bin >"$FWH_FC/cache"
wait_entry 10 fwh-test/direct.bin "cached 40000 0"
echo 0 >"$FWH_FC/userspace_fallback"
echo 1 >"$FWH_FW_CONFIG/force_sysfs_fallback"

info "an unanswered request times out: failed with -ETIMEDOUT"
echo 2 >/sys/class/firmware/timeout
echo fwh-test/nobody.bin >"$FWH_FC/cache"
wait_entry 15 fwh-test/nobody.bin "failed 0 -110"

info "uncache while the request is pending: answered later, dropped"
echo 20 >/sys/class/firmware/timeout
echo fwh-test/dropped.bin >"$FWH_FC/cache"
req=/sys/class/firmware/fwh-test!dropped.bin
wait_until 10 test -e "$req/loading" || fail "no fallback request for dropped.bin"
echo fwh-test/dropped.bin >"$FWH_FC/uncache" || fail "uncache while loading"
assert_eq "$(entry fwh-test/dropped.bin)" "" "entry after uncache"
echo 1 >"$req/loading"
cat "$FWH_CASE_TMP/userspace-only.bin" >"$req/data"
echo 0 >"$req/loading"
wait_until 10 sh -c "! test -e '$req'" || fail "request dir stayed"

info "unload with a load in flight waits for it"
echo 3 >/sys/class/firmware/timeout
echo fwh-test/inflight.bin >"$FWH_FC/cache"
wait_until 10 test -e "/sys/class/firmware/fwh-test!inflight.bin/loading" || fail "no request for inflight.bin"
t0=$(now_ms)
rmmod fwh_cache || fail "rmmod with a load in flight"
ms=$(( $(now_ms) - t0 ))
info "rmmod took ${ms}ms"
[ ! -e /sys/devices/fwh_cache ] || fail "/sys/devices/fwh_cache left"
[ ! -e /sys/class/firmware/fwh-test!inflight.bin ] || fail "request left behind"
check_dmesg
