#!/bin/sh
# The installed rule replaces udev's stub, starts the daemon on demand for the request
# that needs it, and an admin can keep the daemon away from a device.
. "$(dirname "$0")/../daemon.sh"
fwh_setup
[ -f /etc/udev/rules.d/50-firmware.rules ] || fail "mask rule not installed"
grep -q fw-helperd /etc/udev/rules.d/50-firmware.rules || fail "mask rule is not ours"

# On demand: the daemon is stopped; the request itself starts it and is answered.
blob "$SRV/demand.bin" 3000
systemctl stop fw-helperd
expect_served demand.bin "$SRV/demand.bin"
systemctl is-active -q fw-helperd || fail "request did not start the daemon"

# Exclusion: FW_HELPERD_IGNORE=1 leaves the request alone (it times out).
printf 'SUBSYSTEM=="firmware", ACTION=="add", ENV{FIRMWARE}=="excluded.bin", ENV{FW_HELPERD_IGNORE}="1"\n' \
	> /etc/udev/rules.d/40-vmtest-exclude.rules
udevadm control --reload
blob "$SRV/excluded.bin" 100
echo 2 > /sys/class/firmware/timeout
start=$(now_ms)
request excluded.bin && fail "excluded request was answered"
took=$(( $(now_ms) - start ))
[ "$took" -ge 1500 ] || fail "excluded request ended after ${took} ms, not by the timeout"
journal_has FIRMWARE=excluded.bin && fail "daemon touched an excluded request"
rm -f /etc/udev/rules.d/40-vmtest-exclude.rules "$SRV/demand.bin" "$SRV/excluded.bin"
udevadm control --reload
echo 10 > /sys/class/firmware/timeout
