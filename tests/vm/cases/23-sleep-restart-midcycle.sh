#!/bin/sh
# The daemon dies mid-cycle: killed (SIGKILL, Restart= brings it back) between prepare
# and resume, and restarted while a request waits for the read-only root after resume.
# The registry survives, the pending request is picked up and answered byte-exact, and
# exactly one fw-helperd delay lock is held at the end; the restart does not hold up
# the suspend under way.
. /usr/lib/fwh-vmtest/sleep.sh

GRACE=30
sleep_setup "CacheReleaseSec=${GRACE}s" "DeferMaxSec=90s"
# A restart under TCG can take longer than logind's default 5 s delay.
longer_sleep_delay 30
at_exit "rm -f $FWH_FW_DIR/restart-known.bin $FWH_FW_DIR/restart-pending.bin"

make_blob 250000 "$FWH_FW_DIR/restart-known.bin" 231
make_blob 400000 pending.ref 232
cp pending.ref "$FWH_FW_DIR/restart-pending.bin"
serve restart-known.bin "$FWH_FW_DIR/restart-known.bin"
cp "$FWH_RUNTIME/registry" registry.before
listed() { fwctl list 2>&1 | grep -q '^ *restart-known\.bin .*served'; }
check "fwctl list shows restart-known.bin before the cycle" listed

# 1. Killed after it let the system go, before the kernel suspends. The root goes
# read-only first (the late disk of part 2): all inside logind's InhibitDelayMaxSec.
journal_to_run
hold_sleep
journal_mark
suspend_start
wait_state 10 sleeping || fail "daemon not 'sleeping' 10 s after systemctl suspend (state '$(sleep_state)')"
root_ro
pid1=$(fwh_pid)
t_kill=$(now_ms)
kill -9 "$pid1"
wait_until 20 sh -c "p=\$(systemctl show -p MainPID --value $FWH_UNIT); [ \"\$p\" != 0 ] && [ \"\$p\" != $pid1 ]" \
	|| fail "fw-helperd was not restarted after SIGKILL"
wait_until 20 systemctl is-active -q "$FWH_UNIT" || fail "restarted fw-helperd not active"
pid2=$(fwh_pid)
state2=$(sleep_state)
preparing=$(busctl get-property org.freedesktop.login1 /org/freedesktop/login1 \
	org.freedesktop.login1.Manager PreparingForSleep | cut -d' ' -f2)
suspended=no
_fwh_journal_has MESSAGE_ID=$MSG_SLEEP_START && suspended=yes
info "killed PID $pid1 while 'sleeping'; Restart= brought PID $pid2 in $(( $(now_ms) - t_kill )) ms: state '$state2', logind PreparingForSleep $preparing, suspend entered already: $suspended"
show_locks
if [ "$preparing" = true ] && [ "$suspended" = no ]; then
	check "restarted before the suspend (logind still preparing): SleepState not 'resuming' (got '$state2')" \
		test "$state2" != resuming
else
	info "note: the restart was not before the suspend (slow guest); its state is not judged"
fi
t_let_go=$(now_ms)
release_sleep
wait_resumed 90 || fail "the suspend cycle did not end within 90 s"
info "cycle over $(( $(now_ms) - t_let_go )) ms after we let go"
journal_since_mark _SYSTEMD_UNIT=systemd-logind.service | grep -i 'timeout is reached' >late.txt
sed 's/^/  | /' late.txt
check "the restarted daemon did not hold up the suspend under way (logind's delay timeout)" \
	sh -c "! grep -q fw-helperd late.txt"
grep -v fw-helperd late.txt | grep -q . && info "note: our own staging lock ran into InhibitDelayMaxSec (slow guest)"
# Requests served during the cycle may add names (the kernel's own cache asks at suspend
# when the fallback is forced); none of those known before may be lost.
kept_all() {
	awk -F'\t' 'NR == FNR { want[$1] = 1; next } { have[$1] = 1 }
		END { for (n in want) if (!(n in have)) { print "lost: " n; bad = 1 }; exit bad }' \
		registry.before "$FWH_RUNTIME/registry"
}
check "registry intact after SIGKILL (every name known before is kept)" kept_all
check "fwctl list still shows restart-known.bin" listed
not_locked_by() { ! fwh_locks | grep -qx "$1"; }
check "no fw-helperd lock leaked from the killed instance (PIDs: $(fwh_locks | tr '\n' ' '))" \
	not_locked_by "$pid1"
check "daemon is resuming" _fwh_state_is resuming

# 2. A request waits for the root; the daemon restarts meanwhile.
journal_mark
t_req=$(now_ms)
trigger_bg trigger_request restart-pending.bin
wait_until 10 sh -c "[ -e /sys/class/firmware/restart-pending.bin/loading ]" \
	|| check_fail "restart-pending.bin never appeared in sysfs"
sleep 2
check "restart-pending.bin waits while the root is read-only" _fwh_trigger_pending
check "PID $pid2 counts it deferred" test "$(fwh_sleep_json deferred)" = 1
systemctl restart "$FWH_UNIT" || check_fail "systemctl restart with a read-only root failed: $(systemctl status --no-pager $FWH_UNIT 2>&1 | tail -n 5)"
wait_until 20 systemctl is-active -q "$FWH_UNIT" || fail "fw-helperd did not come back after restart on a read-only root"
pid3=$(fwh_pid)
info "restarted: PID $pid3, state '$(sleep_state)', pending '$(pending_requests | tr '\n' ' ')'"
sleep 2
check "restart-pending.bin not aborted by the restart" _fwh_trigger_pending
check "PID $pid3 picked it up and holds it back" test "$(fwh_sleep_json deferred)" = 1
t_rw=$(now_ms)
root_rw
journalctl --flush
wait_trigger 30
rc=$?
t_done=$(now_ms)
info "restart-pending.bin: exit $rc, $((t_done - t_req)) ms after the request, $((t_done - t_rw)) ms after remount,rw"
check "restart-pending.bin answered" test "$rc" = 0
readback got-pending
check "restart-pending.bin byte-exact" cmp -s got-pending pending.ref
wait_journal 5 MESSAGE_ID=$MSG_SERVED FIRMWARE=restart-pending.bin
by=$(entry_field _PID MESSAGE_ID=$MSG_SERVED FIRMWARE=restart-pending.bin)
check "served by the restarted daemon (PID $by, expected $pid3)" test "$by" = "$pid3"
check "no request timed out or failed" \
	test -z "$(journal_since_mark _SYSTEMD_UNIT=$FWH_UNIT FW_RESULT=timeout + _SYSTEMD_UNIT=$FWH_UNIT FW_RESULT=failed)"
check "registry intact after the restart" grep -q '^restart-known\.bin	250000	' "$FWH_RUNTIME/registry"
check "fwctl list still shows restart-known.bin" listed
show_journal _SYSTEMD_UNIT=$FWH_UNIT

# 3. The cycle ends as usual: released, one lock, held by the last instance.
wait_journal $((GRACE + 10)) MESSAGE_ID=$MSG_CACHE_RELEASED _SYSTEMD_UNIT=$FWH_UNIT
wait_at_rest 15 || check_fail "not back at rest: state '$(sleep_state)'"
show_locks
check "exactly one fw-helperd delay lock, held by PID $pid3" fwh_lock_held
checks_done
