#!/bin/sh
# SIGKILL while fw-helperd prewarms before sleep: the firmware it reads lies on a slow
# disk (a device-mapper `delay` target), so the daemon is caught in 'prewarming'. The
# suspend goes on without it (its lock died with it, nothing holds up logind), Restart=
# brings a new instance that knows it started mid-cycle, the registry is intact, and
# after resume exactly one delay lock is held, by the new instance, which serves on.
. /usr/lib/fwh-vmtest/fault.sh

need_fw_helperd
need_disk_tools loop dm_mod dm_delay ext4 crc32c_generic

ROOT=/srv/fwh-slow-disk
DM=fwh-slow
DELAY_MS=2000
IMG=$FWH_CASE_TMP/slow.img

# The slow disk: every read waits DELAY_MS.
truncate -s 8M "$IMG"
mkfs.ext2 -q -F "$IMG" || fail "mkfs.ext2"
make_blob 600000 slow.ref 581
mkdir -p "$ROOT"
at_exit "rmdir $ROOT"
mount -o loop "$IMG" "$ROOT" || fail "loop mount of the image"
cp slow.ref "$ROOT/prewarm-slow.bin"
umount "$ROOT" || fail "umount"
loopdev=$(losetup -f --show "$IMG") || fail "losetup"
at_exit "losetup -d $loopdev"
echo "0 $(( $(stat -c %s "$IMG") / 512 )) delay $loopdev 0 $DELAY_MS" | dmsetup create "$DM" \
	|| fail "dmsetup create (delay)"
at_exit "dmsetup remove $DM"
mount -o ro "/dev/mapper/$DM" "$ROOT" || fail "mount /dev/mapper/$DM"
at_exit "umount $ROOT"

fault_setup "SearchPath=$ROOT" "[Sleep]" "PrewarmFirmware=prewarm-slow.bin" \
	"PrewarmTimeoutSec=20s" "CacheReleaseSec=2s"
pm_test=$(sed 's/.*\[\([a-z]*\)\].*/\1/' /sys/power/pm_test)
at_exit "echo $pm_test >/sys/power/pm_test"
longer_sleep_delay 30
at_exit "rm -f $FWH_FW_DIR/prewarm-known.bin"
make_blob 50000 "$FWH_FW_DIR/prewarm-known.bin" 582
serve prewarm-known.bin "$FWH_FW_DIR/prewarm-known.bin"
cp "$FWH_RUNTIME/registry" registry.before

# Nothing of the slow file in the page cache: prewarm has to wait for the disk.
echo 3 >/proc/sys/vm/drop_caches
hold_sleep
journal_mark
suspend_start
wait_state 20 prewarming || fail "daemon not 'prewarming' 20 s after systemctl suspend (state '$(sleep_state)')"
pid1=$(fwh_pid)
t_kill=$(now_ms)
kill -KILL "$pid1"
pid2=$(wait_new_pid "$pid1" 30) || fail "fw-helperd was not restarted after SIGKILL"
info "killed PID $pid1 while 'prewarming'; Restart= brought PID $pid2 after $(( $(now_ms) - t_kill )) ms"
check "the new instance knows it started mid-cycle" wait_until 10 \
	_fwh_journal_has _PID="$pid2" MESSAGE="Started in the middle of a suspend cycle (prewarming)."
release_sleep
wait_resumed 90 || fail "the suspend cycle did not end within 90 s"
journal_since_mark _SYSTEMD_UNIT=systemd-logind.service | grep -i 'timeout is reached' >late.txt
sed 's/^/  | /' late.txt
check "nothing of fw-helperd held up the suspend (logind's delay timeout)" \
	sh -c "! grep -q fw-helperd late.txt"

kept_all() {
	awk -F'\t' 'NR == FNR { want[$1] = 1; next } { have[$1] = 1 }
		END { for (n in want) if (!(n in have)) { print "lost: " n; bad = 1 }; exit bad }' \
		registry.before "$FWH_RUNTIME/registry"
}
check "registry intact after SIGKILL (every name known before is kept)" kept_all
wait_at_rest 60 || check_fail "not back at rest: state '$(sleep_state)', locks '$(fwh_locks | tr '\n' ' ')'"
show_locks
not_locked_by() { ! fwh_locks | grep -qx "$1"; }
check "no lock of the killed PID $pid1 left" not_locked_by "$pid1"
check "exactly one fw-helperd delay lock, held by PID $pid2" fwh_lock_held
serve prewarm-known.bin "$FWH_FW_DIR/prewarm-known.bin"
check "the daemon is still PID $pid2 and serves" test "$(fwh_pid)" = "$pid2"
check "no request left open: '$(pending_requests | tr '\n' ' ')'" test -z "$(pending_requests)"
checks_done
