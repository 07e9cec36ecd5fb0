#!/bin/sh
# The daemon's own scans leave another program's no-uevent request alone (dell_rbu's BIOS
# upload has no timeout, and an early -1 aborts it), take one CustomFallback= names, never
# take a request udev is still excluding; fwctl rescan takes any.
. "$(dirname "$0")/../daemon.sh"
fwh_setup
echo 60 > /sys/class/firmware/timeout
DROPIN=/etc/fw-helperd/fw-helperd.conf.d/60-vmtest-custom.conf
SLOW_RULE=/run/udev/rules.d/40-vmtest-slow-exclude.rules
cleanup() {
	for d in /sys/class/firmware/*/loading; do [ -e "$d" ] && echo -1 > "$d"; done 2>/dev/null
	rm -f "$DROPIN" "$SLOW_RULE" /tmp/silent.status /tmp/named.status /tmp/slow.status
	udevadm control --reload
	fwh_restart
}
trap cleanup EXIT

# mount_scan: a mount table change makes the daemon scan (a firmware root may have appeared).
mount_scan() {
	mkdir -p /run/fwh-vmtest-mnt
	mount -t tmpfs none /run/fwh-vmtest-mnt && umount /run/fwh-vmtest-mnt
}

# still_pending NAME STATUSFILE WHEN: nobody answered the request.
still_pending() {
	[ -e "/sys/class/firmware/$1/loading" ] || fail "$1 was answered $3"
	[ -e "$2" ] && fail "$1's writer returned $(cat "$2") $3"
	[ -n "$(journalctl -q -o cat -u fw-helperd FIRMWARE="$1" | head -n 1)" ] &&
		fail "fw-helperd logged an answer to $1 $3"
	return 0
}

# 1. Another program's request: the scans at stop, at start and on a mount change pass it by.
blob "$SRV/silent.bin" 5000
custom_request silent.bin /tmp/silent.status
fwh_restart
mount_scan
sleep 2
still_pending silent.bin /tmp/silent.status "by a scan of the daemon's own"
# the admin's word takes it
fwctl rescan || fail "fwctl rescan failed"
wait_status /tmp/silent.status
[ "$(cat /tmp/silent.status)" = 0 ] || fail "fwctl rescan did not answer silent.bin"
cmp -s /dev/test_firmware "$SRV/silent.bin" || fail "silent.bin: wrong bytes"
note "no-uevent request left alone by the start, stop and mount scans; taken by fwctl rescan"

# 2. CustomFallback= makes such requests the daemon's: the start scan takes it.
blob "$SRV/named-silent.bin" 6000
printf '[Service]\nCustomFallback=named-*\n' > "$DROPIN"
systemctl stop fw-helperd
custom_request named-silent.bin /tmp/named.status
fwh_restart start
wait_status /tmp/named.status
[ "$(cat /tmp/named.status)" = 0 ] || fail "CustomFallback= request not answered"
cmp -s /dev/test_firmware "$SRV/named-silent.bin" || fail "named-silent.bin: wrong bytes"
rm -f "$DROPIN"
fwh_restart
note "CustomFallback=named-* taken by the start scan"

# 3. A request an admin's rule excludes, scanned while udev is still running that rule: the
# database has no entry yet, which must not read as "not excluded".
blob "$SRV/slow-excluded.bin" 7000
mkdir -p /run/udev/rules.d
echo 'SUBSYSTEM=="firmware", ACTION=="add", ENV{FIRMWARE}=="slow-excluded.bin", PROGRAM="/bin/sleep 3", ENV{FW_HELPERD_IGNORE}="1"' > "$SLOW_RULE"
udevadm control --reload
sleep 1 # the daemon notices a rule that excludes (and waits for udev's events from then on)
( request slow-excluded.bin; echo $? > /tmp/slow.status ) &
for _ in $(seq 100); do [ -e /sys/class/firmware/slow-excluded.bin/loading ] && break; sleep 0.1; done
mount_scan
sleep 5
still_pending slow-excluded.bin /tmp/slow.status "though excluded"
echo -1 > /sys/class/firmware/slow-excluded.bin/loading
wait_status /tmp/slow.status
[ "$(cat /tmp/slow.status)" != 0 ] || fail "aborted request succeeded"
note "excluded request not taken by a scan during udev's rule"
rm -f "$SRV/silent.bin" "$SRV/named-silent.bin" "$SRV/slow-excluded.bin"
