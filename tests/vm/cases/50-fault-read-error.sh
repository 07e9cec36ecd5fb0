#!/bin/sh
# Read errors from the disk under a firmware root: an ext2 file system on a device-mapper
# table whose middle has `error` segments (EIO for every read there) over a loop device.
# A file failing 1 MiB into it (half of it streamed already) and one failing in its first
# block: each request is answered -1, the driver gets nothing, a "failed" journal entry
# names the file with ERRNO=5; the daemon goes on serving, from that root too.
. /usr/lib/fwh-vmtest/fault.sh

need_fw_helperd
need_disk_tools loop dm_mod ext4 crc32c_generic

ROOT=/srv/fwh-fault-disk
DM=fwh-fault
BLK=4096
IMG=$FWH_CASE_TMP/disk.img

# The file system, written through a loop device of its own.
truncate -s 16M "$IMG"
mkfs.ext2 -q -F -b $BLK "$IMG" || fail "mkfs.ext2"
make_blob 2097152 mid.ref 541
make_blob 300000 head.ref 542
make_blob 100000 ok.ref 543
mkdir -p "$ROOT"
at_exit "rmdir $ROOT"
mount -o loop "$IMG" "$ROOT" || { dmesg | tail -n 5; fail "loop mount of the image"; }
cp mid.ref "$ROOT/ioerr-mid.bin"
cp head.ref "$ROOT/ioerr-head.bin"
cp ok.ref "$ROOT/ioerr-ok.bin"
umount "$ROOT" || fail "umount"

# first_block FILE INDEX: the file system block holding the file's block INDEX.
first_block() {
	debugfs -R "blocks /$1" "$IMG" 2>/dev/null | tr ' ' '\n' | grep . | sed -n "$(($2 + 1))p"
}
mid=$(first_block ioerr-mid.bin 256)
head=$(first_block ioerr-head.bin 0)
[ -n "$mid" ] && [ -n "$head" ] || fail "debugfs found no blocks"
info "error segments: block $mid (ioerr-mid.bin at 1 MiB) and $head (ioerr-head.bin at 0), 8 blocks each"

loopdev=$(losetup -f --show "$IMG") || fail "losetup"
at_exit "losetup -d $loopdev"
sectors=$(( $(stat -c %s "$IMG") / 512 ))
spb=$((BLK / 512))
table=$(printf '%s\n%s\n' "$mid" "$head" | sort -n | awk -v dev="$loopdev" -v spb="$spb" -v total="$sectors" '
	BEGIN { pos = 0 }
	{ s = $1 * spb; n = 8 * spb
	  if (s > pos) print pos, s - pos, "linear", dev, pos
	  print s, n, "error"; pos = s + n }
	END { if (pos < total) print pos, total - pos, "linear", dev, pos }')
echo "$table" | sed 's/^/  table: /'
echo "$table" | dmsetup create "$DM" || fail "dmsetup create"
at_exit "dmsetup remove $DM"
mount -o ro "/dev/mapper/$DM" "$ROOT" || { dmesg | tail -n 5; fail "mount /dev/mapper/$DM"; }
at_exit "umount $ROOT"
# The fault is real: reading the files through the mount fails, before the daemon does.
assert_fails cmp -s "$ROOT/ioerr-mid.bin" mid.ref
assert_fails cat "$ROOT/ioerr-head.bin" >/dev/null 2>&1
dd if="$ROOT/ioerr-mid.bin" of=/dev/null bs=64k 2>&1 | grep -q 'Input/output error' \
	|| fail "reading ioerr-mid.bin did not fail with EIO"
echo 1 >/proc/sys/vm/drop_caches

fault_setup "SearchPath=$ROOT"
pid=$(fwh_pid)

for name in ioerr-mid.bin ioerr-head.bin; do
	journal_mark
	trigger "$name"
	rc=$?
	check "$name: the driver's request failed (exit $rc)" test "$rc" != 0
	readback got
	check "$name: the driver holds no image ($(stat -c %s got) bytes)" test ! -s got
	wait_journal 20 MESSAGE_ID=$MSG_FAILED FIRMWARE="$name"
	journal_since_mark MESSAGE_ID=$MSG_FAILED FIRMWARE="$name" | sed 's/^/  | /'
	check "$name: the entry names the file" \
		test "$(entry_field FW_PATH MESSAGE_ID=$MSG_FAILED FIRMWARE="$name")" = "$ROOT/$name"
	check "$name: the entry has ERRNO=5 (EIO), got '$(entry_field ERRNO MESSAGE_ID=$MSG_FAILED FIRMWARE="$name")'" \
		test "$(entry_field ERRNO MESSAGE_ID=$MSG_FAILED FIRMWARE="$name")" = 5
	check "$name: no served entry" test -z "$(journal_since_mark MESSAGE_ID=$MSG_SERVED FIRMWARE="$name")"
done

# Still serving, from the failing disk's good blocks and from elsewhere.
make_blob 5000 "$FWH_FW_DIR/ioerr-after.bin" 544
at_exit "rm -f $FWH_FW_DIR/ioerr-after.bin"
assert_served ioerr-ok.bin ok.ref
assert_served ioerr-after.bin "$FWH_FW_DIR/ioerr-after.bin"
info "served ioerr-ok.bin from the same disk and ioerr-after.bin after the errors"
check "the daemon is the same process (PID $pid)" test "$(fwh_pid)" = "$pid"
check "no request left open: '$(pending_requests | tr '\n' ' ')'" test -z "$(pending_requests)"
checks_done
