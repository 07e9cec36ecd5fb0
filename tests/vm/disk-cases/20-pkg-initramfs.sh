#!/bin/sh
# SPDX-License-Identifier: MIT
# The installed package survives update-initramfs and a reboot into the
# regenerated initramfs: the switch is on from sysctl.d at boot, the daemon
# serves. The initramfs carries a 50-firmware.rules and must answer a request
# as stock udev does (at once, -1), not leave it to the kernel's 60 s timeout:
# a test-only hook adds test_firmware to it and a local-top script requests a
# missing name there (switch on for that request only) and leaves the result
# in /run, which the real root inherits.
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/pkg.sh
need_installed

hook=/etc/initramfs-tools/hooks/fwh-vmtest
script=/etc/initramfs-tools/scripts/local-top/fwh-vmtest
initrd=/boot/initrd.img-$(uname -r)

if [ "$FWH_BOOT" = 1 ]; then
	cat >"$hook" <<-'EOS'
	#!/bin/sh
	# fw-helperd VM test: test_firmware in the initramfs.
	case "$1" in prereqs) exit 0 ;; esac
	. /usr/share/initramfs-tools/hook-functions
	manual_add_modules test_firmware
	EOS
	cat >"$script" <<-'EOS'
	#!/bin/sh
	# fw-helperd VM test: one request for a missing firmware in the initramfs,
	# with udevd running; result and milliseconds into /run.
	case "$1" in prereqs) exit 0 ;; esac
	cs() { read -r u _ </proc/uptime; echo "${u%.*}${u#*.}"; }
	modprobe test_firmware
	tf=/sys/devices/virtual/misc/test_firmware
	i=0
	while [ ! -w $tf/trigger_request ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	echo 1 >/proc/sys/kernel/firmware_config/force_sysfs_fallback
	t0=$(cs)
	if printf '%s' fwh-initramfs-missing.bin >$tf/trigger_request 2>/dev/null; then r=served; else r=failed; fi
	t1=$(cs)
	echo 0 >/proc/sys/kernel/firmware_config/force_sysfs_fallback
	echo "$r $(( (t1 - t0) * 10 ))" >/run/fwh-vmtest-initramfs
	EOS
	chmod 0755 "$hook" "$script"
	info "update-initramfs -u"
	t0=$(now_ms)
	update-initramfs -u >"$FWH_CASE_TMP/u.log" 2>&1 || { cat "$FWH_CASE_TMP/u.log"; fail "update-initramfs -u"; }
	info "update-initramfs took $(( $(now_ms) - t0 )) ms"
	lsinitramfs "$initrd" >"$FWH_CASE_TMP/list"
	grep '50-firmware.rules$' "$FWH_CASE_TMP/list" | sed 's/^/  initramfs: /'
	grep -q '50-firmware.rules$' "$FWH_CASE_TMP/list" || fail "no 50-firmware.rules in $initrd"
	grep -q 'test_firmware\.ko' "$FWH_CASE_TMP/list" || fail "the test hook did not add test_firmware"
	reboot_then_continue
fi

# Not regenerated: the next update-initramfs (a dpkg operation) drops them.
rm -f "$hook" "$script"
info "after the reboot into the regenerated initramfs"
force_is 1
wait_active fw-helperd.service
setup_test_firmware_stock
make_blob 3000 "$FWH_FW_DIR/fwh-reboot.bin"
assert_answered fwh-reboot.bin served

info "the request made in the initramfs"
[ -f /run/fwh-vmtest-initramfs ] || fail "no /run/fwh-vmtest-initramfs: the local-top script did not run"
read -r r ms </run/fwh-vmtest-initramfs
info "initramfs: $r after $ms ms"
assert_eq "$r" failed "request for a missing firmware in the initramfs"
assert_lt "$ms" "$FWH_PROMPT_MS" "initramfs request, ms"
