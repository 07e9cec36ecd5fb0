#!/bin/sh
# Memory bounds: a prewarm that would outgrow PrewarmMemoryMax holds what fits, names what
# does not (FW_PREWARM_TOO_BIG), never holds more than the ceiling and gives it all back;
# a request for a blob over MaxSize is answered -1 at once with a "failed" entry (EFBIG),
# the driver gets nothing and the daemon serves on.
. /usr/lib/fwh-vmtest/fault.sh

CEILING=1048576
fault_setup "MaxSize=2M" "[Sleep]" "PrewarmMemoryMax=$CEILING" "CacheReleaseSec=2s"
at_exit "rm -f $FWH_FW_DIR/mem-*.bin"
make_blob 600000 "$FWH_FW_DIR/mem-a.bin" 611
make_blob 700000 "$FWH_FW_DIR/mem-b.bin" 612
make_blob 3000000 "$FWH_FW_DIR/mem-huge.bin" 613
serve mem-a.bin "$FWH_FW_DIR/mem-a.bin"
serve mem-b.bin "$FWH_FW_DIR/mem-b.bin"
pid=$(fwh_pid)
rss0=$(fwh_rss_kib "$pid")

# 600 kB + 700 kB do not fit in 1 MiB: at most one is held, one at least is named. (Names
# earlier cases left in the registry compete for the same megabyte.)
# Judged from the prewarm's own entry: CacheReleaseSec may be over before a look at the bus.
journal_mark
fwctl prewarm | sed 's/^/  | /'
wait_journal 10 MESSAGE_ID=$MSG_PREWARMED
bytes=$(entry_field FW_CACHE_BYTES MESSAGE_ID=$MSG_PREWARMED)
entries=$(entry_field FW_CACHE_ENTRIES MESSAGE_ID=$MSG_PREWARMED)
too_big=$(entry_field FW_PREWARM_TOO_BIG MESSAGE_ID=$MSG_PREWARMED)
info "held after Prewarm(): $entries images, $bytes bytes (ceiling $CEILING)"
check "at most the ceiling held ($bytes <= $CEILING)" test "$bytes" -le "$CEILING"
check "something held" test "$entries" -ge 1
check "what did not fit is named (FW_PREWARM_TOO_BIG='$too_big')" sh -c \
	"echo ' $too_big ' | grep -q -e ' mem-a.bin ' -e ' mem-b.bin '"
released() { [ "$(fwh_prop CacheEntries)" = 0 ] && [ "$(fwh_prop CacheBytes)" = 0 ]; }
check "all given back after CacheReleaseSec" wait_until 20 released
info "VmRSS $rss0 KiB before, $(fwh_rss_kib "$pid") KiB after the release"

# Over MaxSize: refused before a byte is streamed.
journal_mark
trigger mem-huge.bin
rc=$?
check "the driver's request for a blob over MaxSize failed (exit $rc)" test "$rc" != 0
readback got
check "the driver holds no image" test ! -s got
wait_journal 10 MESSAGE_ID=$MSG_FAILED FIRMWARE=mem-huge.bin
journal_since_mark MESSAGE_ID=$MSG_FAILED FIRMWARE=mem-huge.bin | sed 's/^/  | /'
errno=$(entry_field ERRNO MESSAGE_ID=$MSG_FAILED FIRMWARE=mem-huge.bin)
check "logged with ERRNO=27 (EFBIG), got '$errno'" test "$errno" = 27
serve mem-a.bin "$FWH_FW_DIR/mem-a.bin"
check "the daemon is the same process (PID $pid)" test "$(fwh_pid)" = "$pid"
check "no request left open: '$(pending_requests | tr '\n' ' ')'" test -z "$(pending_requests)"
checks_done
