#!/bin/sh
# Never a stall: while fw-helperd is not running, 50-firmware.rules hands a request to
# fw-helperd-guard, which starts the daemon (the request is then served) or, when the daemon
# cannot run, answers -1 within a second, as udev's stub did: unit masked, broken
# configuration (exit 78), start limit hit after a crash loop. The daemon also starts and
# serves without the system bus, and takes its name when the bus comes.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../daemon.sh"
fwh_setup
blob "$SRV/guard.bin" 5000
MSG_GUARD=11b603da630d43bbb9686be2a24365c3

# request_timed NAME: sets $answered (served or failed) and $ms (kernel_answer_ms).
request_timed() {
	if request "$1" 2>/dev/null; then answered=served; else answered=failed; fi
	ms=$(kernel_answer_ms "$1")
}

# expect_abort_within_1s NAME REASON
expect_abort_within_1s() {
	request_timed "$1"
	note "$2: answered ($answered) after $ms ms"
	[ "$answered" = failed ] || fail "$2: request served"
	[ "$ms" -lt 1000 ] || fail "$2: answered after $ms ms, not within 1 s"
	journalctl -q -o export -b MESSAGE_ID=$MSG_GUARD FIRMWARE="$1" | grep -qxE "FW_REASON=($3)" \
		|| fail "$2: no guard entry with FW_REASON=$3"
}

restore() {
	systemctl unmask --runtime fw-helperd.service 2>/dev/null
	rm -f /etc/fw-helperd/fw-helperd.conf.d/99-broken.conf /run/systemd/system/fw-helperd.service.d/99-crash.conf
	rmdir /run/systemd/system/fw-helperd.service.d 2>/dev/null
	systemctl unmask --runtime dbus.socket dbus.service 2>/dev/null
	systemctl start dbus.socket dbus.service
	systemctl daemon-reload
	systemctl reset-failed fw-helperd.service
	systemctl restart fw-helperd
}
trap restore EXIT

# 1. Stopped: the guard starts the daemon, whose first scan serves the request.
systemctl stop fw-helperd
[ ! -e /run/fw-helperd/listening ] || fail "listening flag left after stop"
request_timed guard.bin
note "stopped daemon: request $answered after $ms ms"
[ "$answered" = served ] || fail "request not served after the guard started the daemon"
cmp -s /dev/test_firmware "$SRV/guard.bin" || fail "wrong bytes"
systemctl is-active -q fw-helperd || fail "daemon not started by the guard"

# 2. Masked.
systemctl stop fw-helperd
systemctl mask --runtime fw-helperd.service
expect_abort_within_1s guard.bin "unit masked" unit-masked
systemctl unmask --runtime fw-helperd.service

# 3. A broken configuration: exit 78, not restarted.
printf '[Service]\nWorkers=0\n' > /etc/fw-helperd/fw-helperd.conf.d/99-broken.conf
systemctl restart fw-helperd 2>/dev/null
[ "$(systemctl show -P ExecMainStatus fw-helperd)" = 78 ] \
	|| fail "broken config: exit status $(systemctl show -P ExecMainStatus fw-helperd), expected 78"
expect_abort_within_1s guard.bin "broken configuration" config-broken
rm -f /etc/fw-helperd/fw-helperd.conf.d/99-broken.conf
systemctl reset-failed fw-helperd

# 4. A crash loop until the start limit stops the unit.
mkdir -p /run/systemd/system/fw-helperd.service.d
# (every start fails at once; a wide limit interval, so a slow host still hits it)
printf '[Unit]\nStartLimitIntervalSec=120\nStartLimitBurst=3\n[Service]\nExecStartPre=\nExecStartPre=/bin/false\n' \
	> /run/systemd/system/fw-helperd.service.d/99-crash.conf
systemctl daemon-reload
# systemd 252 keeps Result=exit-code when the limit stops a unit that had failed already:
# its own word for it is in the journal.
limit_hit() { journalctl -q -b -u fw-helperd.service | grep -q 'Start request repeated too quickly'; }
for _ in $(seq 10); do
	systemctl restart fw-helperd 2>/dev/null
	limit_hit && break
	sleep 0.2
done
note "after the crash loop: Result=$(systemctl show -P Result fw-helperd)"
limit_hit || fail "start limit not hit"
expect_abort_within_1s guard.bin "start limit hit" "start-limit-hit|unit-failed"
rm -f /run/systemd/system/fw-helperd.service.d/99-crash.conf
systemctl daemon-reload
systemctl reset-failed fw-helperd

# 5. No system bus: the daemon starts and serves, and takes its name when the bus is back.
systemctl stop fw-helperd
systemctl mask --runtime dbus.socket dbus.service
systemctl stop dbus.socket dbus.service
# (the socket file stays behind, RemoveOnStop=no: nobody listens on it any more)
systemctl is-active -q dbus.socket dbus.service && fail "the system bus is still up"
systemctl start fw-helperd || fail "fw-helperd does not start without the system bus"
request_timed guard.bin
note "without dbus: request $answered after $ms ms"
[ "$answered" = served ] || fail "request not served without the bus"
systemctl unmask --runtime dbus.socket dbus.service
systemctl start dbus.socket dbus.service
for _ in $(seq 100); do fwctl status >/dev/null 2>&1 && break; sleep 0.1; done
fwctl status >/dev/null || fail "fw-helperd not back on the bus 10 s after dbus came"
note "back on the bus: $(journalctl -q -o cat -u fw-helperd -b | grep -c 'Back on the system bus') time(s)"
