#!/bin/sh
# SPDX-License-Identifier: MIT
# The test bed itself: the guest booted the way a real host does, with the
# services fw-helperd depends on running.
. /usr/lib/fwh-vmtest/lib.sh

assert_eq "$(readlink /proc/1/exe)" /usr/lib/systemd/systemd "PID 1"
for unit in systemd-journald.service systemd-udevd.service dbus.service \
	systemd-logind.service; do
	assert_eq "$(systemctl is-active "$unit")" active "$unit"
done
# A failed unit of the product under test is for its own cases to judge;
# any other failed unit means the bed is broken.
state=$(systemctl is-system-running)
others=$(systemctl list-units --failed --plain --no-legend | awk '{ print $1 }' | grep -v '^fw-helperd' || true)
case "$state" in
running) ;;
degraded)
	[ -z "$others" ] || { systemctl --failed --no-pager; fail "failed units: $others"; }
	info "degraded by fw-helperd units only: $(systemctl --failed --plain --no-legend | awk '{ print $1 }')" ;;
*) systemctl --failed --no-pager; fail "system state '$state'" ;;
esac

# / must be reachable for services running as other users (see rootfs.sh).
assert_eq "$(stat -c %a /)" 755 "mode of /"
# The journal is persistent and takes our entries.
assert_true test -d "/var/log/journal/$(cat /etc/machine-id)"
tag="fwh-vmtest-$$"
journal_mark
logger -t fwh-vmtest "$tag"
wait_journal 10 SYSLOG_IDENTIFIER=fwh-vmtest MESSAGE="$tag"

# The unprivileged user, and the system bus as that user.
assert_eq "$(as_user id -u)" 1000 "fwuser uid"
as_user busctl --system call org.freedesktop.DBus /org/freedesktop/DBus \
	org.freedesktop.DBus GetId >/dev/null || fail "fwuser cannot call the system bus"
busctl call org.freedesktop.login1 /org/freedesktop/login1 \
	org.freedesktop.login1.Manager CanSuspend >/dev/null || fail "logind not on the bus"

# The kernel's firmware loader options the suite relies on.
assert_true test -d /sys/class/firmware
assert_true test -e /proc/sys/kernel/firmware_config/force_sysfs_fallback
assert_true test -e /sys/power/pm_test
modinfo test_firmware >/dev/null || fail "test_firmware module not installed"
info "kernel $(uname -r), $(ls /usr/lib/fwh-vmtest/modules | wc -l) payload module(s)"
