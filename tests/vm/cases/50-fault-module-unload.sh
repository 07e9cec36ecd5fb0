#!/bin/sh
# The companion module unloaded (rmmod) while fw-helperd uses it: the daemon notices (one
# journal entry), does not spin on the vanished sysfs files, and goes through a suspend
# cycle without it. Loaded again by hand, the daemon has systemd restart it, and the new
# instance pins through the module again.
. /usr/lib/fwh-vmtest/fault.sh

MSG_MODULE=db8b506e751c473b8ee4036c7c046eb7
FWHC=/sys/kernel/fwh_cache
modinfo fwh_cache >/dev/null 2>&1 || skip "fwh_cache is not installed in the guest"
sleep_setup "CacheReleaseSec=2s"
at_exit "modprobe fwh_cache 2>/dev/null; systemctl restart $FWH_UNIT"
[ -d "$FWHC" ] || fail "the daemon did not load fwh_cache"
check "userspace_fallback is on while the daemon uses the module" \
	test "$(cat $FWHC/userspace_fallback)" = 1
at_exit "rm -f $FWH_FW_DIR/unload-known.bin"
make_blob 40000 "$FWH_FW_DIR/unload-known.bin" 601
serve unload-known.bin "$FWH_FW_DIR/unload-known.bin"
pid=$(fwh_pid)

# cpu_ticks PID: utime + stime, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

journal_mark
rmmod fwh_cache || fail "rmmod fwh_cache"
wait_journal 10 MESSAGE_ID=$MSG_MODULE FW_MODULE_STATUS="not used" _PID="$pid"
journal_since_mark MESSAGE_ID=$MSG_MODULE | sed 's/^/  | /'
t0=$(cpu_ticks "$pid")
sleep 3
used=$(( $(cpu_ticks "$pid") - t0 ))
hz=$(getconf CLK_TCK)
info "daemon CPU over 3 s after the unload: $used ticks (${hz}/s)"
check "the daemon does not spin on the module's vanished files ($used ticks < 30% of 3 s)" \
	test "$used" -lt $(( hz * 3 * 30 / 100 ))

# A suspend cycle without the module.
journal_mark
suspend_start
wait_resumed 90 || fail "the suspend cycle without the module did not end within 90 s"
wait_at_rest 60 || check_fail "not at rest after the cycle: state '$(sleep_state)'"
check "prewarmed without the module" wait_until 10 _fwh_journal_has MESSAGE_ID=$MSG_PREWARMED
check "exactly one fw-helperd delay lock, held by PID $pid" fwh_lock_held

# Loaded again: the daemon has systemd restart it (its sandbox made the module's files
# writable as they were at its start), and the new instance uses the module.
journal_mark
modprobe fwh_cache || fail "modprobe fwh_cache"
pid2=$(wait_new_pid "$pid" 30) || fail "the daemon did not restart to use the module loaded again"
info "module loaded again: PID $pid restarted as PID $pid2"
check "the restart was the daemon's own (its notice)" \
	_fwh_journal_has _PID="$pid" MESSAGE="Companion module fwh_cache loaded; restarting fw-helperd.service to use it."
check "the new instance uses the module" wait_until 10 \
	_fwh_journal_has MESSAGE_ID=$MSG_MODULE FW_MODULE_STATUS="in use" _PID="$pid2"
check "userspace_fallback is on again" test "$(cat $FWHC/userspace_fallback)" = 1
wait_at_rest 30 || check_fail "not at rest after the restart: state '$(sleep_state)'"
journal_mark
suspend_start
wait_resumed 90 || fail "the suspend cycle with the module back did not end within 90 s"
wait_at_rest 60 || check_fail "not at rest after the second cycle: state '$(sleep_state)'"
pinned() { [ "$(entry_field FW_MODULE_CACHED MESSAGE_ID=$MSG_MODULE _PID="$pid2")" -ge 1 ] 2>/dev/null; }
check "the module pinned what was prewarmed" wait_until 10 pinned
check "the daemon is still PID $pid2" test "$(fwh_pid)" = "$pid2"
serve unload-known.bin "$FWH_FW_DIR/unload-known.bin"
check "no request left open: '$(pending_requests | tr '\n' ' ')'" test -z "$(pending_requests)"
checks_done
