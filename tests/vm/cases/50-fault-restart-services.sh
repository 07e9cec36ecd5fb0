#!/bin/sh
# The services fw-helperd depends on restart under it, the daemon keeps running (the
# same process from start to end):
# - systemd-udevd restarted: later requests are answered (the uevent monitor survives);
#   udevd hung (SIGSTOP) while a request comes, and udevd down with its sockets (udev's
#   copy of the uevent lost for good): answered at once from the kernel's own uevent, or
#   (with an exclusion rule installed) once udevd is back, at the latest on `fwctl
#   rescan` (which one is reported);
# - systemd-logind restarted: the daemon takes its sleep delay lock from the new logind,
#   exactly one, and goes on serving.
# dbus restarts are 50-fault-restart-dbus.
. /usr/lib/fwh-vmtest/fault.sh

UDEVD=systemd-udevd.service
UDEVD_SOCKETS="systemd-udevd-control.socket systemd-udevd-kernel.socket"
fault_setup
at_exit "rm -f $FWH_FW_DIR/svc-*.bin"
at_exit "systemctl start $UDEVD_SOCKETS $UDEVD"
i=1
for s in 3000 70000 5000 123456; do
	make_blob "$s" "$FWH_FW_DIR/svc-$i.bin" $((530 + i))
	i=$((i + 1))
done
pid=$(fwh_pid)
same_daemon() { [ "$(fwh_pid)" = "$pid" ]; }
udevd_pid() { systemctl show -p MainPID --value "$UDEVD"; }
logind_on_bus() { busctl status org.freedesktop.login1 >/dev/null 2>&1; }

# 1a. udevd restarted.
old=$(udevd_pid)
systemctl restart "$UDEVD" || fail "systemctl restart $UDEVD"
wait_until 30 systemctl is-active -q "$UDEVD" || fail "$UDEVD did not come back"
info "udevd restarted: PID $old -> $(udevd_pid)"
assert_served svc-1.bin "$FWH_FW_DIR/svc-1.bin"
info "svc-1.bin served after the udevd restart"

# The kernel's own event reaches the daemon without udevd (no exclusion rule installed):
# a request may come and go between two looks.
appeared_or_answered() {
	test -e "/sys/class/firmware/$1/loading" || ! kill -0 "$FWH_TRIGGER_PID" 2>/dev/null
}

# 1b. udevd hung while a request comes.
upid=$(udevd_pid)
kill -STOP "$upid"
at_exit "kill -CONT $upid 2>/dev/null || :"
trigger_bg trigger_request svc-2.bin
wait_until 10 appeared_or_answered svc-2.bin || fail "svc-2.bin never appeared in sysfs"
sleep 2
if _fwh_trigger_pending; then
	info "svc-2.bin waits while udevd is stopped"
else
	info "note: svc-2.bin was answered while udevd was stopped"
fi
kill -CONT "$upid"
wait_trigger 60
rc=$?
check "svc-2.bin answered once udevd went on (exit $rc)" test "$rc" = 0
check "svc-2.bin byte-exact" cmp -s "$FWH_TF_DEV" "$FWH_FW_DIR/svc-2.bin"

# 1c. udevd down with its sockets: the request's uevent goes nowhere.
journal_mark
systemctl stop $UDEVD $UDEVD_SOCKETS || fail "cannot stop udevd"
trigger_bg trigger_request svc-3.bin
wait_until 10 appeared_or_answered svc-3.bin || fail "svc-3.bin never appeared in sysfs"
sleep 2
systemctl start $UDEVD_SOCKETS $UDEVD || fail "cannot start udevd again"
wait_until 30 systemctl is-active -q "$UDEVD" || fail "$UDEVD did not come back"
if wait_until 15 sh -c "! kill -0 $FWH_TRIGGER_PID 2>/dev/null"; then
	info "svc-3.bin (uevent lost) answered without help once udevd was back"
else
	info "svc-3.bin (uevent lost) still pending 15 s after udevd is back: fwctl rescan"
	fwctl rescan || check_fail "fwctl rescan failed"
fi
wait_trigger 60
rc=$?
check "svc-3.bin answered (exit $rc)" test "$rc" = 0
check "svc-3.bin byte-exact" cmp -s "$FWH_TF_DEV" "$FWH_FW_DIR/svc-3.bin"
check "the daemon is the same process after the udevd faults" same_daemon
check "the daemon still holds its lock" fwh_lock_held

# 2. logind restarted.
journal_mark
show_locks
systemctl restart systemd-logind || fail "cannot restart systemd-logind"
wait_until 30 logind_on_bus || fail "logind not back on the bus"
retaken() {
	_fwh_journal_has _PID="$pid" MESSAGE="logind is (back) on the bus, taking the sleep delay lock."
}
check "the daemon saw the new logind and took its lock again" wait_until 30 retaken
if wait_at_rest 30; then
	info "lock taken again from the new logind"
else
	check_fail "no lock from the restarted logind within 30 s (locks '$(fwh_locks | tr '\n' ' ')', state '$(sleep_state)')"
fi
show_locks
check "exactly one fw-helperd delay lock, held by PID $pid" fwh_lock_held
assert_served svc-4.bin "$FWH_FW_DIR/svc-4.bin"
info "svc-4.bin served after the logind restart"
check "the daemon is the same process after the logind restart" same_daemon

check "no request left open: '$(pending_requests | tr '\n' ' ')'" test -z "$(pending_requests)"
checks_done
