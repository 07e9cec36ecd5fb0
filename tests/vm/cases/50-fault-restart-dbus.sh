#!/bin/sh
# dbus restarted under a running fw-helperd (on Debian 12 logind exits with the old bus
# and systemd restarts it): requests are answered throughout, and the same daemon is back
# on the new bus as org.fwhelperd1, sees the new logind, holds exactly one sleep delay
# lock and answers fwctl. Without a bus it would miss PrepareForSleep (no prewarm, and a
# lock it never releases holds every suspend for InhibitDelayMaxSec).
. /usr/lib/fwh-vmtest/fault.sh

fault_setup
at_exit "rm -f $FWH_FW_DIR/dbus-*.bin"
make_blob 3000 "$FWH_FW_DIR/dbus-1.bin" 561
make_blob 70000 "$FWH_FW_DIR/dbus-2.bin" 562
pid=$(fwh_pid)
on_bus() { busctl status org.fwhelperd1 >/dev/null 2>&1; }
logind_on_bus() { busctl status org.freedesktop.login1 >/dev/null 2>&1; }
retaken() {
	_fwh_journal_has _PID="$pid" MESSAGE="logind is (back) on the bus, taking the sleep delay lock."
}
show_locks

journal_mark
at_exit "logind_on_bus || systemctl restart systemd-logind"
systemctl restart dbus.service || fail "cannot restart dbus"
wait_until 30 systemctl is-active -q dbus.service || fail "dbus did not come back"
assert_served dbus-1.bin "$FWH_FW_DIR/dbus-1.bin"
info "dbus-1.bin served right after the dbus restart"
if ! wait_until 30 logind_on_bus; then
	info "note: logind did not come back on the new bus by itself: restarting it"
	systemctl restart systemd-logind || fail "cannot restart systemd-logind"
	wait_until 30 logind_on_bus || fail "logind not back on the bus"
fi

# Asked without bus activation (busctl status): with the unit active, activating
# org.fwhelperd1 would wait 25 s for a name that never comes.
if wait_until 30 on_bus; then
	info "PID $pid is back on the bus"
	check "the daemon saw the new logind and took its lock again" wait_until 30 retaken
	wait_at_rest 30 || check_fail "not at rest over the new bus (state '$(sleep_state)')"
	check "exactly one fw-helperd delay lock, held by PID $pid" fwh_lock_held
	check "fwctl status works" fwctl status
else
	check_fail "PID $pid is not on the new bus 30 s after the dbus restart (no D-Bus API, no PrepareForSleep)"
	info "fwctl status: $(fwctl status 2>&1 | head -n 1)"
fi
show_locks
show_journal _SYSTEMD_UNIT=$FWH_UNIT

assert_served dbus-2.bin "$FWH_FW_DIR/dbus-2.bin"
info "dbus-2.bin served after the dbus restart"
check "the daemon is the same process (PID $pid)" test "$(fwh_pid)" = "$pid"
check "no request left open: '$(pending_requests | tr '\n' ' ')'" test -z "$(pending_requests)"
checks_done
