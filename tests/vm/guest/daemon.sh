# SPDX-License-Identifier: MIT
# Helpers for the cases that exercise fw-helperd itself; sourced by tests/vm/cases/*.
# Firmware lives only in /srv/firmware, where the kernel's direct loader cannot see it,
# and force_sysfs_fallback makes every miss of the direct loader a fallback request.

TF=/sys/devices/virtual/misc/test_firmware
SRV=/srv/firmware

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "# $*"; }

# Milliseconds on CLOCK_MONOTONIC (the guest has no bc).
now_ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }

fwh_wait_active() {
	for _ in $(seq 100); do
		systemctl is-active -q fw-helperd && return 0
		sleep 0.1
	done
	systemctl status --no-pager fw-helperd >&2
	fail "fw-helperd did not become active"
}

# fwh_restart [start]: (re)start the daemon and wait for it. The cases here restart it more
# often than systemd's default start limit allows (5 starts in 10 s, counting the cases
# before), which is not what they test: the count is reset first.
fwh_restart() {
	systemctl reset-failed fw-helperd 2>/dev/null
	systemctl "${1:-restart}" fw-helperd || fail "systemctl ${1:-restart} fw-helperd"
	fwh_wait_active
}

# Loads test_firmware, forces the fallback, points fw-helperd at /srv/firmware.
fwh_setup() {
	modprobe test_firmware || fail "modprobe test_firmware"
	echo 1 > /proc/sys/kernel/firmware_config/force_sysfs_fallback
	echo 10 > /sys/class/firmware/timeout
	mkdir -p "$SRV" /etc/fw-helperd/fw-helperd.conf.d
	printf '[Firmware]\nSearchPath=%s\n' "$SRV" > /etc/fw-helperd/fw-helperd.conf.d/50-vmtest.conf
	fwh_restart
}

# blob FILE SIZE: deterministic, not all-equal bytes, so offsets matter.
blob() {
	mkdir -p "$(dirname "$1")"
	head -c "$2" /dev/urandom > "$1.tmp" 2>/dev/null
	# the seed must not matter for reproducibility; content is compared, not fixed
	mv "$1.tmp" "$1"
}

# request NAME: the driver asks; returns the write's status (fails when the load failed).
request() {
	printf '%s' "$1" > "$TF/trigger_request"
}

# request_in_background TRIGGER NAME STATUSFILE: the driver asks for NAME through
# test_firmware's TRIGGER file, the writer in the background (its status lands in
# STATUSFILE once it returns); returns when the request is pending in sysfs.
request_in_background() {
	( printf '%s' "$2" > "$TF/$1"; echo $? > "$3" ) &
	for _ in $(seq 100); do [ -e "/sys/class/firmware/$2/loading" ] && return 0; sleep 0.1; done
	fail "request $2 never appeared"
}

# custom_request NAME STATUSFILE: a request sent with no uevent, as another program's
# (dell_rbu's BIOS upload).
custom_request() {
	request_in_background trigger_custom_fallback "$1" "$2"
}

# wait_status STATUSFILE: the writer of a custom_request returned (10 s).
wait_status() {
	for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done
	fail "request behind $1 not finished"
}

# expect_served NAME FILE: the request succeeds and the driver holds exactly FILE.
expect_served() {
	request "$1" || fail "request for '$1' failed"
	cmp -s /dev/test_firmware "$2" || fail "'$1': driver got different bytes than $2"
}

# journal_has FIELD=VALUE...: an entry of fw-helperd matching all of them appears (5 s).
journal_has() {
	for _ in $(seq 50); do
		[ -n "$(journalctl -q -o cat -u fw-helperd "$@" 2>/dev/null | head -n 1)" ] && return 0
		sleep 0.1
	done
	return 1
}

# fwctl_json_field KEY: a counter from `fwctl status --json` (no jq in the guest).
fwctl_counter() {
	fwctl status --json | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"
}

# nobody_answers / answers_again: while fw-helperd is stopped, leave requests unanswered (a
# masked unit is not enough: the udev rule's guard then answers -1 at once, as udev's stub
# would). The installed rule in /etc (a source installation's place) is set aside, and a
# same-named empty rule in /run shadows udev's stub in /lib.
FWH_SHADOW_RULE=/run/udev/rules.d/50-firmware.rules
FWH_ETC_RULE=/etc/udev/rules.d/50-firmware.rules
nobody_answers() {
	[ -e "$FWH_ETC_RULE" ] && mv "$FWH_ETC_RULE" /run/fwh-vmtest-aside-50-firmware.rules
	mkdir -p /run/udev/rules.d
	echo "# nobody answers: $0" > "$FWH_SHADOW_RULE"
	udevadm control --reload
}
answers_again() {
	[ -e /run/fwh-vmtest-aside-50-firmware.rules ] && mv /run/fwh-vmtest-aside-50-firmware.rules "$FWH_ETC_RULE"
	rm -f "$FWH_SHADOW_RULE"
	udevadm control --reload
}
