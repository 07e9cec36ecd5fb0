#!/bin/sh
# The installed rule replaces udev's stub, starts the daemon on demand for the request
# that needs it (through fw-helperd-guard, also after the daemon was killed; no event is
# tagged for systemd, which would cost PID 1 a device unit each), and an admin can keep
# the daemon away from a device. With no rule that
# assigns FW_HELPERD_IGNORE, the daemon answers from the kernel's own event without
# waiting for udev (FW_EVENT=kernel) and does not listen to udev's events at all; with
# one, it listens to them and waits for udev's (FW_EVENT=udev).
. "$(dirname "$0")/../daemon.sh"
fwh_setup
[ -f /etc/udev/rules.d/50-firmware.rules ] || fail "mask rule not installed"
grep -q fw-helperd /etc/udev/rules.d/50-firmware.rules || fail "mask rule is not ours"

# udev's "add" events for firmware, as broadcast (with the TAGS the rules gave them).
mon=${FWH_CASE_TMP:-/tmp}/udev-monitor.txt
udevadm monitor --udev --property --subsystem-match=firmware >"$mon" &
mon_pid=$!
dropin=/run/systemd/system/fw-helperd.service.d/90-vmtest-no-restart.conf
# shellcheck disable=SC2064 # now: the monitor's PID
trap "kill $mon_pid 2>/dev/null; systemctl kill -s CONT fw-helperd 2>/dev/null; rm -f '$dropin'; systemctl daemon-reload" EXIT
sleep 1
# tags_of NAME: the TAGS of the add event for NAME ("none" if untagged)
tags_of() {
	awk -v fw="FIRMWARE=$1" 'BEGIN { RS = ""; FS = "\n" }
		$0 ~ "ACTION=add" && $0 ~ fw { t = "none"; for (i = 1; i <= NF; i++)
			if ($i ~ /^TAGS=/) t = $i; print t }' "$mon" | tail -n 1
}
flag=/run/fw-helperd/listening
# udev_listeners: the daemon's sockets that receive udev's events (netlink
# KOBJECT_UEVENT, protocol 15, bound to udev's group 2), from its /proc/net/netlink
udev_listeners() {
	pid=$(systemctl show -P MainPID fw-helperd)
	inodes=" $(find "/proc/$pid/fd" -lname 'socket:*' -printf '%l ' | tr -d 'socket:[]') "
	awk -v inodes="$inodes" '$2 == 15 && $4 == "00000002" && index(inodes, " " $10 " ") { n++ }
		END { print n + 0 }' "/proc/$pid/net/netlink"
}

# On demand: the daemon is stopped; the request itself starts it and is answered.
blob "$SRV/demand.bin" 3000
systemctl stop fw-helperd
[ -e "$flag" ] && fail "$flag left behind by a stopped daemon"
expect_served demand.bin "$SRV/demand.bin"
systemctl is-active -q fw-helperd || fail "request did not start the daemon"
[ -e "$flag" ] || fail "running daemon did not create $flag"

# Fast path: no exclusion rule is installed, the kernel's event is answered.
blob "$SRV/fast.bin" 2000
expect_served fast.bin "$SRV/fast.bin"
journal_has FIRMWARE=fast.bin FW_EVENT=kernel || fail "fast.bin not answered from the kernel's event"
[ "$(udev_listeners)" = 0 ] || fail "the daemon listens to udev's events with no rule that excludes"
note "fast.bin: $(journalctl -q -o cat -u fw-helperd FIRMWARE=fast.bin | tail -n 1)"

# Killed and not restarted (Restart= off): ExecStopPost takes the flag away, so the next
# request goes to the guard, which starts the daemon, and is answered.
mkdir -p "$(dirname "$dropin")"
printf '[Service]\nRestart=no\n' >"$dropin"
systemctl daemon-reload
systemctl kill -s KILL fw-helperd
for _ in $(seq 50); do
	[ "$(systemctl show -p ActiveState --value fw-helperd)" = failed ] && break
	sleep 0.1
done
[ -e "$flag" ] && fail "$flag left behind by a killed daemon"
blob "$SRV/killed.bin" 1000
expect_served killed.bin "$SRV/killed.bin"
rm -f "$dropin"
systemctl daemon-reload
fwh_wait_active

sleep 1
kill "$mon_pid"
wait "$mon_pid" 2>/dev/null
note "tags: demand.bin $(tags_of demand.bin), fast.bin $(tags_of fast.bin), killed.bin $(tags_of killed.bin)"
for name in demand.bin fast.bin killed.bin; do
	[ "$(tags_of $name)" = none ] || fail "$name tagged: $(tags_of $name)"
done
# the daemon the guard started took them in its first scan
journal_has FIRMWARE=demand.bin FW_EVENT=scan || fail "demand.bin not taken by the start-up scan"
journal_has FIRMWARE=killed.bin FW_EVENT=scan || fail "killed.bin not taken by the start-up scan"
rm -f "$mon" "$SRV/killed.bin"

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
[ "$(udev_listeners)" = 1 ] || fail "the daemon has $(udev_listeners) sockets for udev's events with a rule that excludes"
rm -f /etc/udev/rules.d/40-vmtest-exclude.rules "$SRV/demand.bin" "$SRV/excluded.bin"
udevadm control --reload
# The rule gone, the kernel's events are answered again. The daemon is stopped while both
# copies of the request arrive: it takes the kernel's, which shows the rule gone, and only
# then reads what udev sent, its copy of the same request among it, before it stops
# listening to udev.
pid=$(systemctl show -P MainPID fw-helperd)
kill -STOP "$pid"
request_in_background trigger_request fast.bin /tmp/fast.status
udevadm settle -t 10 || note "udev did not settle"
sleep 0.5
kill -CONT "$pid"
wait_status /tmp/fast.status
[ "$(cat /tmp/fast.status)" = 0 ] || fail "fast.bin not answered after the rule went"
rm -f /tmp/fast.status
cmp -s /dev/test_firmware "$SRV/fast.bin" || fail "fast.bin: wrong bytes after the rule went"
[ "$(journalctl -q -o export -u fw-helperd FIRMWARE=fast.bin | grep -c '^FW_EVENT=kernel$')" = 2 ] \
	|| fail "fast.bin not answered from the kernel's event after the rule went"
[ "$(udev_listeners)" = 0 ] || fail "the daemon still listens to udev's events after the rule went"
rm -f "$SRV/fast.bin" "$SRV/slow.bin"
echo 10 > /sys/class/firmware/timeout
