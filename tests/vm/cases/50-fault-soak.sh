#!/bin/sh
# Soak: a few thousand requests of mixed sizes from two drivers at once: bursts of
# distinct names (fwh_test_burst, request_firmware_nowait), and one-by-one requests and
# batches of 4 requests for one name in flight together (test_firmware), checked byte for
# byte. None is lost, none fails, none is wrong; afterwards the daemon has as many open files as
# before and its memory (VmRSS) is back within a small margin. Each lane stops early when
# BUDGET_S is used up (a slow guest does fewer requests; it is not judged on speed).
. /usr/lib/fwh-vmtest/fault.sh

BURSTS=${FWH_SOAK_BURSTS:-16}
BURST_N=${FWH_SOAK_BURST_N:-128}
ONE_N=32
SINGLES=${FWH_SOAK_SINGLES:-480}
BUDGET_S=${FWH_SOAK_BUDGET_S:-150}
MIN_REQUESTS=300
RSS_SLACK_KIB=2048
BURST=/sys/devices/platform/fwh_test_burst
SUB=soak

t_case=$(now_ms)
fault_setup
modprobe fwh_test_burst 2>/dev/null || skip "fwh_test_burst is not in this payload"
at_exit "rmmod fwh_test_burst 2>/dev/null"
at_exit "rm -rf $FWH_FW_DIR/$SUB"
at_exit "echo 1 >$FWH_TF/reset 2>/dev/null"

# Blobs: the burst's names burst/<i>.bin and test_firmware's one/<i>.bin, sizes cycling
# through page edges and a few larger ones. The two drivers ask for different names: the
# same name from both at once is 50-fault-dup-names.
sizes="1 4095 4096 4097 12345 65536 262145 1048576"
nsizes=8
nth() { _n=$1; shift; shift "$_n"; echo "$1"; }
make_blob 2097152 pool.bin 521
mkdir -p "$FWH_FW_DIR/$SUB/burst" "$FWH_FW_DIR/$SUB/one"
i=0
while [ "$i" -lt "$BURST_N" ]; do
	# shellcheck disable=SC2086
	tail -c +$(( i * 16 + 1 )) pool.bin 2>/dev/null | head -c "$(nth $(( i % nsizes )) $sizes)" \
		>"$FWH_FW_DIR/$SUB/burst/$i.bin"
	i=$((i + 1))
done
# Bursts alternate between two sets of names, so that a name comes back seconds later
# rather than right after its last request (that is 50-fault-dup-names too).
cp -a "$FWH_FW_DIR/$SUB/burst" "$FWH_FW_DIR/$SUB/burst2"
mkdir -p "$FWH_FW_DIR/$SUB/batch"
for i in 0 1 2 3; do
	tail -c +$(( i * 16 + 5 )) pool.bin 2>/dev/null | head -c 4095 >"$FWH_FW_DIR/$SUB/batch/$i.bin"
done
i=0
while [ "$i" -lt "$ONE_N" ]; do
	# shellcheck disable=SC2086
	tail -c +$(( i * 16 + 9 )) pool.bin 2>/dev/null | head -c "$(nth $(( i % nsizes )) $sizes)" \
		>"$FWH_FW_DIR/$SUB/one/$i.bin"
	i=$((i + 1))
done
echo 1 >"$FWH_TF/release_all_firmware"
echo "$BURST_N" >"$BURST/count" || fail "cannot set burst count $BURST_N"
info "setup: $BURST_N blobs written after $(( $(now_ms) - t_case )) ms"

# burst_once SET: one burst of the names in SET/, waited for; prints "ok failed".
burst_once() {
	printf '%s' "$SUB/$1/" >"$BURST/trigger" || { echo "0 refused"; return; }
	_t_end=$(( $(now_ms) + 240000 ))
	while :; do
		read -r _ok _failed _pending <"$BURST/results"
		[ "$_pending" = 0 ] && break
		if [ "$(now_ms)" -ge "$_t_end" ]; then
			abort_pending_requests
			sleep 1
		fi
		sleep 0.1
	done
	echo "$_ok $_failed"
}

# Lane B: bursts of BURST_N distinct names.
lane_bursts() {
	_b=1
	while [ "$_b" -le "$BURSTS" ] && [ "$(now_ms)" -lt "$t_budget" ]; do
		echo "burst $_b $(burst_once "$(nth $((_b % 2)) burst burst2)")"
		_b=$((_b + 1))
	done >bursts.log
}

# Lane A: test_firmware, one request at a time (its own mutex serialises them), every
# 16th a batch of 4 requests for the same small name at once. Each checked byte for byte.
lane_singles() {
	_j=0
	while [ "$_j" -lt "$SINGLES" ] && { [ $((_j % 16)) != 0 ] || [ "$(now_ms)" -lt "$t_budget" ]; }; do
		_i=$(( (_j * 7) % ONE_N ))
		if [ $((_j % 16)) = 15 ]; then
			# 4095 bytes: read_firmware hands back less than a page
			_i=$(( _j / 16 % 4 ))
			printf '%s' "$SUB/batch/$_i.bin" >"$FWH_TF/config_name"
			echo 4 >"$FWH_TF/config_num_requests"
			if ! echo 1 >"$FWH_TF/trigger_batched_requests" 2>/dev/null \
				|| [ "$(cat "$FWH_TF/test_result")" != 0 ]; then
				echo "batch $_j $_i.bin failed: test_result $(cat "$FWH_TF/test_result")"
			else
				for _k in 0 1 2 3; do
					echo "$_k" >"$FWH_TF/config_read_fw_idx"
					cat "$FWH_TF/read_firmware" >batch.out 2>/dev/null
					cmp -s batch.out "$FWH_FW_DIR/$SUB/batch/$_i.bin" \
						|| echo "batch $_j $_i.bin #$_k wrong: $(stat -c %s batch.out) bytes"
				done
			fi
			echo 1 >"$FWH_TF/release_all_firmware"
			echo "batch $_j"
		else
			if ! trigger "$SUB/one/$_i.bin"; then
				echo "single $_j $_i.bin failed"
			elif ! cmp -s "$FWH_TF_DEV" "$FWH_FW_DIR/$SUB/one/$_i.bin"; then
				echo "single $_j $_i.bin wrong: $(cat "$FWH_TF_DEV" | wc -c) bytes"
			else
				echo "single $_j"
			fi
		fi
		_j=$((_j + 1))
	done >singles.log
}

# Warm-up (first use of the workers' memory), then the baseline at rest.
t_warm=$(now_ms)
burst_once burst >warmup.log
info "warm-up burst of $BURST_N: $(( $(now_ms) - t_warm )) ms"
read -r ok failed <warmup.log
[ "$ok $failed" = "$BURST_N 0" ] || fail "warm-up burst: $ok served, $failed failed of $BURST_N"
trigger "$SUB/one/3.bin" || fail "warm-up request failed"
pid=$(fwh_pid)
wait_at_rest 20 || fail "not at rest after the warm-up"
sleep 1
fd0=$(fwh_fd_count "$pid")
rss0=$(fwh_rss_kib "$pid")
served0=$(fwh_prop Served)
failed0=$(fwh_prop Failed)
missing0=$(fwh_prop Missing)
info "before: PID $pid, $fd0 fds, VmRSS $rss0 KiB, served $served0 failed $failed0 missing $missing0"

journal_mark
t0=$(now_ms)
t_budget=$((t0 + BUDGET_S * 1000))
lane_bursts &
pid_b=$!
lane_singles &
pid_a=$!
wait "$pid_b" "$pid_a"
t_soak=$(( $(now_ms) - t0 ))

bursts_ok=$(awk '$4 == 0 { s += $3 } END { print s + 0 }' bursts.log)
bursts_bad=$(awk '$4 != 0' bursts.log)
singles_ok=$(grep -c '^single [0-9]*$' singles.log)
batches_ok=$(grep -c '^batch [0-9]*$' singles.log)
bad=$(grep -v -e '^single [0-9]*$' -e '^batch [0-9]*$' singles.log)
total=$(( bursts_ok + singles_ok + batches_ok * 4 ))
nbursts=$(grep -c . bursts.log)
info "soak: $total requests in $t_soak ms: $nbursts bursts of $BURST_N ($bursts_ok ok), $singles_ok single, $batches_ok batches of 4"
check "every burst request served: $(echo "$bursts_bad" | head -n 3)" test -z "$bursts_bad"
check "every test_firmware request served byte-exact: $(echo "$bad" | head -n 5)" test -z "$bad"
check "at least $MIN_REQUESTS requests in the soak ($total)" test "$total" -ge "$MIN_REQUESTS"
[ "$nbursts" = "$BURSTS" ] && [ "$((singles_ok + batches_ok))" = "$SINGLES" ] \
	|| info "note: the budget of $BUDGET_S s ended the soak early ($nbursts bursts, $((singles_ok + batches_ok)) single/batch)"
check "no request left open: '$(pending_requests | tr '\n' ' ')'" test -z "$(pending_requests)"

wait_at_rest 30 || check_fail "not at rest after the soak: state '$(sleep_state)'"
sleep 1
check "the daemon was not restarted (PID $(fwh_pid))" test "$(fwh_pid)" = "$pid"
fd1=$(fwh_fd_count "$pid")
rss1=$(fwh_rss_kib "$pid")
served1=$(fwh_prop Served)
failed1=$(fwh_prop Failed)
missing1=$(fwh_prop Missing)
info "after: $fd1 fds, VmRSS $rss1 KiB, served $served1 (+$((served1 - served0))) failed $failed1 missing $missing1"
check "daemon counts no failure (Failed $failed0 -> $failed1, Missing $missing0 -> $missing1)" \
	test "$failed1 $missing1" = "$failed0 $missing0"
check "nothing logged as failed, missing or timed out" \
	test -z "$(journal_since_mark MESSAGE_ID=$MSG_FAILED + MESSAGE_ID=$MSG_MISSING)"
# Every served entry carries the size of its file.
find "$FWH_FW_DIR/$SUB" -type f -printf '%p %s\n' >sizes.txt
# Only these fields: a binary field of another (length 10, an LF byte) would break the lines.
journal_export --output-fields=FW_PATH,FW_SIZE MESSAGE_ID=$MSG_SERVED _PID="$pid" | awk '
	/^FW_PATH=/ { p = substr($0, 9) } /^FW_SIZE=/ { s = substr($0, 9) }
	/^$/ { if (p != "") print p, s; p = ""; s = "" }
	END { if (p != "") print p, s }' >served.txt
wrong=$(awk 'NR == FNR { size[$1] = $2; next } size[$1] != $2 { print $1 ": " $2 " bytes, file " size[$1] }' \
	sizes.txt served.txt)
info "$(grep -c . served.txt) served entries in the journal"
check "every served entry has its file's size: $(echo "$wrong" | head -n 3)" test -z "$wrong"
check "open files unchanged: $fd0 before, $fd1 after" test "$fd1" = "$fd0"
[ "$fd1" = "$fd0" ] || show_fds "$pid"
check "VmRSS within $RSS_SLACK_KIB KiB: $rss0 before, $rss1 after" \
	test "$rss1" -le $((rss0 + RSS_SLACK_KIB))
checks_done
