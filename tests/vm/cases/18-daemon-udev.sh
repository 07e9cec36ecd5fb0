#!/bin/sh
# The installed rule replaces udev's stub, starts the daemon on demand for the request
# that needs it, and an admin can keep the daemon away from a device. With no rule that
# assigns FW_HELPERD_IGNORE, the daemon answers from the kernel's own event without
# waiting for udev (FW_EVENT=kernel); with one, it waits for udev's (FW_EVENT=udev).
. "$(dirname "$0")/../daemon.sh"
fwh_setup
[ -f /etc/udev/rules.d/50-firmware.rules ] || fail "mask rule not installed"
grep -q fw-helperd /etc/udev/rules.d/50-firmware.rules || fail "mask rule is not ours"

# On demand: the daemon is stopped; the request itself starts it and is answered.
blob "$SRV/demand.bin" 3000
systemctl stop fw-helperd
expect_served demand.bin "$SRV/demand.bin"
systemctl is-active -q fw-helperd || fail "request did not start the daemon"

# Fast path: no exclusion rule is installed, the kernel's event is answered.
blob "$SRV/fast.bin" 2000
expect_served fast.bin "$SRV/fast.bin"
journal_has FIRMWARE=fast.bin FW_EVENT=kernel || fail "fast.bin not answered from the kernel's event"
note "fast.bin: $(journalctl -q -o cat -u fw-helperd FIRMWARE=fast.bin | tail -n 1)"

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
# Other requests now wait for udev's verdict (the rule was seen without a reload).
blob "$SRV/slow.bin" 2000
expect_served slow.bin "$SRV/slow.bin"
journal_has FIRMWARE=slow.bin FW_EVENT=udev || fail "slow.bin not answered from udev's event"
rm -f /etc/udev/rules.d/40-vmtest-exclude.rules "$SRV/demand.bin" "$SRV/excluded.bin"
udevadm control --reload
# The rule gone, the kernel's events are answered again.
expect_served fast.bin "$SRV/fast.bin"
[ "$(journalctl -q -o export -u fw-helperd FIRMWARE=fast.bin | grep -c '^FW_EVENT=kernel$')" = 2 ] \
	|| fail "fast.bin not answered from the kernel's event after the rule went"
rm -f "$SRV/fast.bin" "$SRV/slow.bin"
echo 10 > /sys/class/firmware/timeout
