#!/bin/sh
# fw-helperd + fwh_cache end to end: a firmware only fw-helperd can find (/srv/firmware),
# never requested since boot (the kernel's own FW_CACHE does not know it), known to the
# daemon from MODULE_FIRMWARE of a loaded module with a bound device. The daemon prewarms
# it before sleep and pins it through the module; the device's resume-time request is then
# served with user space frozen, byte-exact. Without the pin it fails.
. "$(dirname "$0")/../daemon.sh"
. /usr/lib/fwh-vmtest/lib.sh

[ -f "$FWH_VMTEST_DIR/modules/fwh_test_resume.ko" ] || skip "test module not in this payload"
grep -qw devices /sys/power/pm_test 2>/dev/null || skip "no pm_test"
T=/sys/devices/platform/fwh_test_resume
fwh_setup
# Debian's default: no forced fallback. The module asks fw-helperd itself (userspace_fallback,
# a request without a uevent that the daemon finds by rescanning while it pins).
echo 0 > /proc/sys/kernel/firmware_config/force_sysfs_fallback
at_exit "echo none > /sys/power/pm_test"
at_exit "rmmod fwh_test_resume 2>/dev/null || :"
at_exit "rm -rf $SRV/fwh-test"

blob "$SRV/fwh-test/resume.bin" 300007
crc=$(gzip -c "$SRV/fwh-test/resume.bin" | tail -c 8 | od -An -tx4 -N4 | tr -d ' ')
modprobe fwh_test_resume || fail "modprobe fwh_test_resume"
wait_until 5 test -r "$T/resume_count" || fail "test device did not appear"
# A start with the module not loaded yet: the unit loads it before its sandbox is set up,
# or /sys/kernel/fwh_cache would be read-only to the daemon.
systemctl stop fw-helperd
rmmod fwh_cache 2>/dev/null || :
fwh_restart start
fwctl status | grep -qi module || note "status does not mention the module"
lsmod | grep -q '^fwh_cache' || fail "fw-helperd did not load fwh_cache"
assert_eq "$(cat /sys/kernel/fwh_cache/userspace_fallback)" 1 "userspace_fallback while fw-helperd runs"
# the hint scan runs off the loop after start
wait_until 15 sh -c "fwctl list | grep -q fwh-test/resume.bin" \
	|| { fwctl list; fail "hint from MODULE_FIRMWARE not listed"; }

# cycle: a full device suspend/resume through logind (PrepareForSleep, the daemon's lock).
cycle() {
	before=$(cat "$T/resume_count")
	echo devices > /sys/power/pm_test
	systemctl suspend || fail "systemctl suspend"
	wait_until 60 sh -c "[ \$(cat $T/resume_count) -gt $before ]" || fail "no resume seen"
	echo none > /sys/power/pm_test
	note "resume: error $(cat "$T/resume_error"), $(cat "$T/resume_size") bytes," \
		"crc32 $(cat "$T/resume_crc32"), $(cat "$T/resume_usecs") us"
}

journal_mark
cycle
assert_eq "$(cat "$T/resume_error")" 0 "resume_error with fw-helperd and the module"
assert_eq "$(cat "$T/resume_size")" 300007 "resume_size"
assert_eq "$(cat "$T/resume_crc32")" "$crc" "crc32"
journal_since_mark MESSAGE_ID=db8b506e751c473b8ee4036c7c046eb7 | grep -q pinned \
	|| fail "no journal entry for the module's pin"
journal_since_mark _SYSTEMD_UNIT=fw-helperd.service | grep -q 'Served firmware fwh-test/resume.bin' \
	|| fail "the module's load was not answered by fw-helperd"
fwctl list | grep 'fwh-test/resume.bin' | grep -q '/devices/fwh_cache/' \
	&& fail "the module's own load was recorded as a device's need"

# Contrast: without the pin the same resume fails. (With the daemon running but no module
# it fails too, only after the resume window's raised timeout: user space is frozen while
# the driver waits. Stopping the daemon keeps that wait short.)
rmmod fwh_test_resume
systemctl stop fw-helperd
assert_eq "$(cat /sys/kernel/fwh_cache/userspace_fallback)" 0 "userspace_fallback after fw-helperd stopped"
systemctl mask --runtime fw-helperd
at_exit "systemctl unmask --runtime fw-helperd; systemctl start fw-helperd"
sleep 11 # the kernel's own FW_CACHE lets go of what it held 10 s after resume
rmmod fwh_cache || fail "rmmod fwh_cache"
modprobe fwh_test_resume || fail "modprobe fwh_test_resume"
wait_until 5 test -r "$T/resume_count" || fail "test device did not appear"
echo 2 > /sys/class/firmware/timeout
cycle
[ "$(cat "$T/resume_error")" != 0 ] || fail "resume succeeded without the pin: the test proves nothing"
