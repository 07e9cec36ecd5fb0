#!/bin/sh
# Requests while the daemon is resuming and the root file system is still read-only:
# a name held in memory is answered from memory (its file is gone from disk), one
# that is not waits (DEFERRED) and is answered from disk after `mount -o remount,rw /`;
# both byte-exact, neither timing out.
. /usr/lib/fwh-vmtest/sleep.sh

# The grace period outlasts the steps below: the daemon stays "resuming" throughout.
GRACE=40
sleep_setup "CacheReleaseSec=${GRACE}s" "DeferMaxSec=90s"
# Staging the late disk under TCG can take longer than logind's default 5 s delay.
longer_sleep_delay 30
at_exit "rm -f $FWH_FW_DIR/resume-cached.bin $FWH_FW_DIR/resume-uncached.bin"

# resume-cached.bin: asked for by a device, so prewarmed; resume-uncached.bin: on disk,
# never asked for, so not held.
make_blob 700000 cached.ref 211
make_blob 500000 uncached.ref 212
cp cached.ref "$FWH_FW_DIR/resume-cached.bin"
cp uncached.ref "$FWH_FW_DIR/resume-uncached.bin"
serve resume-cached.bin cached.ref
timeout_before=$(cat /sys/class/firmware/timeout)

# The real order on a machine whose disk comes back late: the root is writable when
# the cycle starts (prewarm reads it) and not yet writable when the daemon hears of the
# resume. Our own delay lock holds the suspend after the daemon let go, so the root
# goes read-only exactly between the two, not racing the freezer.
journal_to_run
hold_sleep
journal_mark
suspend_start
wait_state 10 sleeping || fail "daemon not 'sleeping' 10 s after systemctl suspend (state '$(sleep_state)')"
fwh_lock_gone || { show_locks; check_fail "daemon still holds its delay lock while 'sleeping'"; }
held=$(fwh_prop CacheEntries)
info "prewarmed: $held entries, $(fwh_prop CacheBytes) bytes"
check "resume-cached.bin prewarmed" test "${held:-0}" -ge 1
rm "$FWH_FW_DIR/resume-cached.bin"
root_ro
info "root read-only: $(awk '$2 == "/" { o = $4 } END { print o }' /proc/mounts)"
t_let_go=$(now_ms)
release_sleep
wait_resumed 90 || fail "the suspend cycle did not end within 90 s"
info "cycle over $(( $(now_ms) - t_let_go )) ms after we let go"
journal_since_mark _SYSTEMD_UNIT=systemd-logind.service | grep -i 'timeout is reached' \
	&& check_fail "logind ran into InhibitDelayMaxSec: the staging was not inside it"
check "root still read-only after resume" root_is_ro
check "daemon is resuming" _fwh_state_is resuming
check "kernel fallback timeout raised for the resume window ($(cat /sys/class/firmware/timeout) s, was $timeout_before)" \
	test "$(cat /sys/class/firmware/timeout)" -gt "$timeout_before"

# The kernel's FW_CACHE kept its own copy of every name test_firmware loaded and answers
# those itself until it drops them, 10 s after resume (device_uncache_fw_images_delay):
# wait for that, so the request below reaches the daemon.
sleep 11
check "still resuming 11 s later (CacheReleaseSec=${GRACE}s)" _fwh_state_is resuming

# 1. Held in memory: answered at once, though the file is gone and the root read-only.
journal_mark
ms=$(trigger_ms resume-cached.bin)
rc=$?
info "resume-cached.bin: exit $rc after $ms ms"
check "resume-cached.bin answered" test "$rc" = 0
readback got-cached
check "resume-cached.bin byte-exact" cmp -s got-cached cached.ref
check "resume-cached.bin answered within 3 s" test "${ms:-99999}" -lt 3000
src=$(entry_field FW_SOURCE MESSAGE_ID=$MSG_SERVED FIRMWARE=resume-cached.bin)
check "SERVED entry of resume-cached.bin says FW_SOURCE=cache (got '${src:-no entry}')" test "$src" = cache

# 2. Not held: waits for the root, then comes from disk.
t_req=$(now_ms)
trigger_bg trigger_request resume-uncached.bin
wait_until 10 sh -c "[ -e /sys/class/firmware/resume-uncached.bin/loading ]" \
	|| check_fail "resume-uncached.bin never appeared in sysfs"
sleep 3
deferred=$(fwh_sleep_json deferred)
info "after 3 s: pending '$(pending_requests | tr '\n' ' ')', daemon's deferred count '$deferred'"
check "resume-uncached.bin still pending while the root is read-only" _fwh_trigger_pending
check "the daemon counts one deferred request" test "$deferred" = 1
check "not served from disk behind the gate" \
	test -z "$(journal_since_mark MESSAGE_ID=$MSG_SERVED FIRMWARE=resume-uncached.bin)"
t_rw=$(now_ms)
root_rw
journalctl --flush
wait_trigger 30
rc=$?
t_done=$(now_ms)
info "resume-uncached.bin: exit $rc, $((t_done - t_req)) ms after the request, $((t_done - t_rw)) ms after remount,rw"
check "resume-uncached.bin answered" test "$rc" = 0
readback got-uncached
check "resume-uncached.bin byte-exact" cmp -s got-uncached uncached.ref
check "answered within 5 s of the remount" test $((t_done - t_rw)) -lt 5000
wait_journal 5 MESSAGE_ID=$MSG_DEFERRED FIRMWARE=resume-uncached.bin
why=$(entry_field FW_DEFER_END MESSAGE_ID=$MSG_DEFERRED FIRMWARE=resume-uncached.bin)
waited=$(entry_field FW_DEFERRED_USEC MESSAGE_ID=$MSG_DEFERRED FIRMWARE=resume-uncached.bin)
src=$(entry_field FW_SOURCE MESSAGE_ID=$MSG_SERVED FIRMWARE=resume-uncached.bin)
info "DEFERRED: end '$why', waited '$waited' us; SERVED: FW_SOURCE '$src'"
check "the deferral ended because the file systems came back (FW_DEFER_END=gate)" test "$why" = gate
check "the deferral lasted until the remount (>= 3 s)" test "${waited:-0}" -ge 3000000
check "resume-uncached.bin came from disk (FW_SOURCE=disk)" test "$src" = disk
check "no request timed out or failed" \
	test -z "$(journal_since_mark _SYSTEMD_UNIT=$FWH_UNIT FW_RESULT=timeout + _SYSTEMD_UNIT=$FWH_UNIT FW_RESULT=failed)"
show_journal _SYSTEMD_UNIT=$FWH_UNIT

# The grace period ends; the daemon is back at rest, the timeout as it was.
wait_journal $((GRACE + 10)) MESSAGE_ID=$MSG_CACHE_RELEASED _SYSTEMD_UNIT=$FWH_UNIT
wait_at_rest 10 || check_fail "not back at rest: state '$(sleep_state)', locks: $(fwh_locks | tr '\n' ' ')"
check "kernel fallback timeout back to $timeout_before s" test "$(cat /sys/class/firmware/timeout)" = "$timeout_before"
checks_done
