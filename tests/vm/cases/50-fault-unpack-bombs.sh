#!/bin/sh
# Compression bombs under the shipped limits (UnpackMemoryMax=256M, the unit's MemoryMax=):
# a burst of requests at once (fwh_test_burst), four of them bombs that unpack to 768 MiB
# of zeros (an .xz whose index says so, a .zst whose frames each declare 16 MiB, a .zst
# that declares nothing) and two honest images. Each bomb is answered -1 with
# FW_REASON=unpack-memory, without the daemon taking more than the limit: it is not killed
# or restarted, and the honest images are served byte-exact while the bombs are refused.
. /usr/lib/fwh-vmtest/fault.sh

BURST=/sys/devices/platform/fwh_test_burst
SUB=bomb
COPIES=48	# 16 MiB each: 768 MiB

fault_setup
modprobe fwh_test_burst 2>/dev/null || skip "fwh_test_burst is not in this payload"
at_exit "rmmod fwh_test_burst 2>/dev/null"
at_exit "rm -rf $FWH_FW_DIR/$SUB"
command -v xz >/dev/null && command -v zstd >/dev/null || skip "xz or zstd missing"

# One compressed unit of 16 MiB of zeros, repeated as cat(1) joins streams and frames.
mkdir -p "$FWH_FW_DIR/$SUB"
repeat() { # FILE COPIES
	_i=0
	while [ "$_i" -lt "$2" ]; do cat "$1"; _i=$((_i + 1)); done
}
head -c 16M /dev/zero >zeros
xz -1 -C crc32 -c zeros >unit.xz
zstd -q -1 -c zeros >unit-declared.zst	# from a file: the frame declares its size
zstd -q -1 -c <zeros >unit-stream.zst	# from a pipe: no size in the frame
repeat unit.xz "$COPIES" >"$FWH_FW_DIR/$SUB/0.bin.xz"
repeat unit-declared.zst "$COPIES" >"$FWH_FW_DIR/$SUB/1.bin.zst"
repeat unit-stream.zst "$COPIES" >"$FWH_FW_DIR/$SUB/2.bin.zst"
repeat unit-declared.zst "$COPIES" >"$FWH_FW_DIR/$SUB/3.bin.zst"
rm -f zeros unit.xz unit-declared.zst unit-stream.zst
make_blob 3000000 honest.bin 733
xz -C crc32 -c honest.bin >"$FWH_FW_DIR/$SUB/4.bin.xz"
zstd -q -c honest.bin >"$FWH_FW_DIR/$SUB/5.bin.zst"
ls -l "$FWH_FW_DIR/$SUB" | sed 's/^/  | /'

pid=$(fwh_pid)
restarts=$(systemctl show -p NRestarts --value "$FWH_UNIT")
cg=/sys/fs/cgroup$(systemctl show -p ControlGroup --value "$FWH_UNIT")
info "unit MemoryMax=$(systemctl show -p MemoryMax --value "$FWH_UNIT")"
oom_kills() { awk '$1 == "oom_kill" { print $2 }' "$cg/memory.events"; }
oom0=$(oom_kills)
journal_mark
echo 6 >"$BURST/count" || fail "cannot set burst count"
printf '%s' "$SUB/" >"$BURST/trigger" || fail "burst refused"
done_burst() { read -r _ok _failed _pending <"$BURST/results" && [ "$_pending" = 0 ]; }
check "every request of the burst answered" wait_until 150 done_burst
read -r ok failed pending <"$BURST/results"
info "burst: $ok served, $failed failed, $pending pending, in $(cat "$BURST/total_us") us"
check "the two honest images served, the four bombs refused ($ok/$failed)" \
	test "$ok/$failed" = "2/4"
for i in 0 1 2 3; do
	wait_journal 10 MESSAGE_ID=$MSG_FAILED FIRMWARE=$SUB/$i.bin
	reason=$(entry_field FW_REASON MESSAGE_ID=$MSG_FAILED FIRMWARE=$SUB/$i.bin)
	check "$SUB/$i.bin: FW_REASON=unpack-memory, got '$reason'" test "$reason" = unpack-memory
done
journal_since_mark MESSAGE_ID=$MSG_FAILED | sed 's/^/  | /'
[ -r "$cg/memory.peak" ] && info "cgroup memory.peak $(( $(cat "$cg/memory.peak") / 1048576 )) MiB"
check "the daemon is the same process (PID $pid), not killed for memory" test "$(fwh_pid)" = "$pid"
check "not restarted" test "$(systemctl show -p NRestarts --value "$FWH_UNIT")" = "$restarts"
check "no OOM kill in the unit's cgroup" test "$(oom_kills)" = "$oom0"
serve "$SUB/4.bin" honest.bin
serve "$SUB/5.bin" honest.bin
check "no request left open: '$(pending_requests | tr '\n' ' ')'" test -z "$(pending_requests)"
checks_done
