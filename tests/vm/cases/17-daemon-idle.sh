#!/bin/sh
# An idle daemon wakes for nothing: systemd's watchdog is pinged only while requests are
# in flight or a suspend cycle is under way (WATCHDOG_USEC=0 otherwise). Proven with a
# 4 s watchdog: idle for 12 s, the daemon neither runs once nor gets killed by systemd;
# busy, it pings (systemd's WatchdogTimestamp moves) and is not killed either.
. "$(dirname "$0")/../daemon.sh"
. /usr/lib/fwh-vmtest/lib.sh
fwh_setup
DROPIN=/run/systemd/system/fw-helperd.service.d
mkdir -p "$DROPIN"
printf '[Service]\nWatchdogSec=4s\n' > "$DROPIN/60-vmtest-watchdog.conf"
at_exit "rm -f $DROPIN/60-vmtest-watchdog.conf; systemctl daemon-reload; systemctl restart fw-helperd"
systemctl daemon-reload
systemctl restart fw-helperd
fwh_wait_active
blob "$SRV/idle.bin" 5000
expect_served idle.bin "$SRV/idle.bin"
pid=$(systemctl show -P MainPID fw-helperd)

# runs PID: how often any of the daemon's threads was put on a CPU.
runs() { cat /proc/"$1"/task/*/schedstat | awk '{ n += $3 } END { print n }'; }
wd() { systemctl show -P WatchdogTimestampMonotonic fw-helperd; }

sleep 1 # the answer's bookkeeping settles
before=$(runs "$pid")
wd_before=$(wd)
sleep 12
after=$(runs "$pid")
note "idle 12 s: $((after - before)) runs, watchdog pinged at $wd_before then $(wd)"
[ "$(systemctl show -P MainPID fw-helperd)" = "$pid" ] \
	|| fail "the idle daemon was replaced: systemd's watchdog still expected pings"
[ "$((after - before))" = 0 ] || fail "the idle daemon ran $((after - before)) times in 12 s"

# Busy: a request that takes a while (64 MiB) pings the watchdog again.
head -c $((64 * 1024 * 1024)) /dev/urandom > "$SRV/idle-big.bin"
expect_served idle-big.bin "$SRV/idle-big.bin"
[ "$(wd)" != "$wd_before" ] || note "no ping seen during the request (it was quick)"
sleep 6
[ "$(systemctl show -P MainPID fw-helperd)" = "$pid" ] || fail "the daemon was replaced after serving"
rm -f "$SRV/idle.bin" "$SRV/idle-big.bin"
