#!/bin/sh
# One suspend cycle with the real logind (pm_test=devices): fw-helperd holds a sleep
# delay lock, prewarms on PrepareForSleep(true) what a device asked for, lets the
# system go before the kernel suspends, and after resume releases the memory once
# CacheReleaseSec is over, holding its lock again - in that order, from the journal.
. /usr/lib/fwh-vmtest/sleep.sh

GRACE=3
sleep_setup "CacheReleaseSec=${GRACE}s"
at_exit "rm -f $FWH_FW_DIR/sleep-cycle.bin"

show_locks
check "exactly one fw-helperd sleep delay lock, held by the daemon (PID $(fwh_pid))" fwh_lock_held

# A device asks for it: recorded against that device, listed, kept under /run.
make_blob 300000 "$FWH_FW_DIR/sleep-cycle.bin" 20
serve sleep-cycle.bin "$FWH_FW_DIR/sleep-cycle.bin"
fwctl list >list.txt 2>&1
sed 's/^/  list| /' list.txt
check "fwctl list shows sleep-cycle.bin, served to test_firmware" \
	grep -q '^ *sleep-cycle\.bin .*served.*/devices/virtual/misc/test_firmware' list.txt
check "the registry under $FWH_RUNTIME holds it" \
	grep -q "^sleep-cycle\.bin	300000	/devices/virtual/misc/test_firmware" "$FWH_RUNTIME/registry"
timeout_before=$(cat /sys/class/firmware/timeout)

# The signals themselves, as logind sends them.
if command -v dbus-monitor >/dev/null; then
	dbus-monitor --system "type='signal',interface='org.freedesktop.login1.Manager',member='PrepareForSleep'" \
		>signals.txt 2>&1 &
	monitor_pid=$!
	at_exit "kill $monitor_pid 2>/dev/null || true"
	sleep 0.5
fi

journal_mark
t0=$(now_ms)
suspend_start
wait_resumed 90 || fail "the suspend cycle did not end within 90 s"
info "suspend cycle: $(( $(now_ms) - t0 )) ms until PrepareForSleep(false)"
wait_journal $((GRACE + 20)) MESSAGE_ID=$MSG_CACHE_RELEASED _SYSTEMD_UNIT=$FWH_UNIT
wait_at_rest 10 || check_fail "not back at rest after the release: state '$(sleep_state)', locks: $(fwh_locks | tr '\n' ' ')"
info "back at rest: $(( $(now_ms) - t0 )) ms"
show_journal _SYSTEMD_UNIT=$FWH_UNIT + _SYSTEMD_UNIT=systemd-suspend.service \
	+ _SYSTEMD_UNIT=systemd-logind.service + SYSLOG_IDENTIFIER=kernel

if [ -n "${monitor_pid:-}" ]; then
	kill "$monitor_pid" 2>/dev/null
	wait "$monitor_pid" 2>/dev/null
	check "logind sent PrepareForSleep true, then false" \
		test "$(grep -o 'boolean [a-z]*' signals.txt | tr '\n' ' ')" = "boolean true boolean false "
fi

# The entries, with their times (CLOCK_MONOTONIC, us). The kernel's are the printk
# times: journald itself is frozen with the rest of user space.
t_prepare=$(entry_usec_grep 'going to sleep' -- _SYSTEMD_UNIT=$FWH_UNIT)
t_prewarmed=$(entry_usec MESSAGE_ID=$MSG_PREWARMED)
t_released=$(entry_usec_grep '^Released the sleep delay lock' -- _SYSTEMD_UNIT=$FWH_UNIT)
t_sleep=$(entry_usec MESSAGE_ID=$MSG_SLEEP_START)
t_kentry=$(entry_usec_grep '^PM: suspend entry' -- _TRANSPORT=kernel)
t_kexit=$(entry_usec_grep '^PM: suspend exit' -- _TRANSPORT=kernel)
t_woke=$(entry_usec MESSAGE_ID=$MSG_SLEEP_STOP)
t_resumed=$(entry_usec_grep '^Resumed' -- _SYSTEMD_UNIT=$FWH_UNIT)
t_cache_released=$(entry_usec MESSAGE_ID=$MSG_CACHE_RELEASED)
t_relocked=$(entry_usec_grep '^Holding a sleep delay lock' "${t_resumed:-0}" -- _SYSTEMD_UNIT=$FWH_UNIT)
for v in prepare prewarmed released sleep kentry kexit woke resumed cache_released relocked; do
	eval "info \"  t_$v = \${t_$v:-(none)}\""
done

# before_us A B WHAT: both seen, A earlier than B
before_us() {
	[ -n "$1" ] && [ -n "$2" ] && [ "$1" -lt "$2" ]
}
check "PrepareForSleep(true) seen by the daemon" test -n "$t_prepare"
check "prewarm done (PREWARMED) after PrepareForSleep(true)" before_us "$t_prepare" "$t_prewarmed"
check "lock released after prewarm" before_us "$t_prewarmed" "$t_released"
check "lock released before systemd-sleep enters the sleep state" before_us "$t_released" "$t_sleep"
check "lock released before the kernel's 'PM: suspend entry'" before_us "$t_released" "$t_kentry"
check "the kernel resumed ('PM: suspend exit') before the daemon's resume" before_us "$t_kexit" "$t_resumed"
check "the daemon resumed after systemd-sleep's return" before_us "$t_woke" "$t_resumed"
check "cache released after the resume" before_us "$t_resumed" "$t_cache_released"
if [ -n "$t_resumed" ] && [ -n "$t_cache_released" ]; then
	held_ms=$(( (t_cache_released - t_resumed) / 1000 ))
	info "  cache held ${held_ms} ms after resume (CacheReleaseSec=${GRACE}s)"
	check "... not before CacheReleaseSec" test "$held_ms" -ge $((GRACE * 1000 - 100))
	check "... nor much after it" test "$held_ms" -le $((GRACE * 1000 + 3000))
fi
check "lock taken again after the resume" test -n "$t_relocked"
prewarm_took=$(( (${t_prewarmed:-0} - ${t_prepare:-0}) / 1000 ))
info "  prewarm took ${prewarm_took} ms after PrepareForSleep(true)"
check "prewarm well inside logind's InhibitDelayMaxSec (5 s)" test "$prewarm_took" -lt 3000

# What the entries say.
names=$(entry_field FW_PREWARM_NAMES MESSAGE_ID=$MSG_PREWARMED)
bytes=$(entry_field FW_CACHE_BYTES MESSAGE_ID=$MSG_PREWARMED)
trig=$(entry_field FW_PREWARM_TRIGGER MESSAGE_ID=$MSG_PREWARMED)
info "  PREWARMED: trigger '$trig', names '$names', bytes '$bytes'"
check "PREWARMED says the trigger was sleep" test "$trig" = sleep
check "PREWARMED names sleep-cycle.bin" sh -c "echo ' $names ' | grep -q ' sleep-cycle\.bin '"
check "PREWARMED counts its bytes" test "${bytes:-0}" -ge 300000
rbytes=$(entry_field FW_CACHE_BYTES MESSAGE_ID=$MSG_CACHE_RELEASED)
reason=$(entry_field FW_RELEASE_REASON MESSAGE_ID=$MSG_CACHE_RELEASED)
info "  CACHE_RELEASED: bytes '$rbytes', reason '$reason'"
check "CACHE_RELEASED gives back what prewarm took" test "$rbytes" = "$bytes"
check "CACHE_RELEASED after resume says so" test "$reason" = resumed

# Requests during the cycle (the kernel's FW_CACHE pass re-requests what devices loaded,
# unless the companion module holds it already): none failed.
info "  served during the cycle: $(journal_export MESSAGE_ID=$MSG_SERVED | sed -n 's/^FW_SOURCE=//p' | sort | uniq -c | tr '\n' ' ')"
check "no request failed during the cycle" \
	test -z "$(journal_since_mark _SYSTEMD_UNIT=$FWH_UNIT FW_RESULT=failed + _SYSTEMD_UNIT=$FWH_UNIT FW_RESULT=timeout)"

# Every entry readable as text by journal tools: a MESSAGE with a newline or control
# bytes is exported as a binary field (journalctl -o export/json).
journal_export _SYSTEMD_UNIT=$FWH_UNIT >export.bin
n_binary=$(grep -a -c '^MESSAGE$' export.bin)
if [ "$n_binary" -gt 0 ]; then
	grep -a -A1 '^MESSAGE$' export.bin | head -n 4 | od -c | head -n 8 | sed 's/^/  od| /'
fi
check "fw-helperd's MESSAGE fields are text ($n_binary exported as binary)" test "$n_binary" = 0

# Back where it was.
check "CacheEntries 0 after the release" test "$(fwh_prop CacheEntries)" = 0
check "CacheBytes 0 after the release" test "$(fwh_prop CacheBytes)" = 0
check "kernel fallback timeout back to $timeout_before s" test "$(cat /sys/class/firmware/timeout)" = "$timeout_before"
show_locks
check "exactly one fw-helperd sleep delay lock again, held by the daemon" fwh_lock_held
checks_done
