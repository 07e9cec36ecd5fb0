#!/bin/sh
# The same firmware names asked for by two drivers at once, over and over: bursts of 64
# names (fwh_test_burst) while test_firmware asks for the same names one by one. A name
# is then often asked for again right after its last request was answered. Every
# request must be answered, byte-exact. A request that sits in /sys/class/firmware for
# STUCK_S seconds while the daemon has nothing in flight was dropped: it is reported
# (the case fails), then `fwctl rescan` is tried on it so that the case goes on.
. /usr/lib/fwh-vmtest/fault.sh

N=64
BUDGET_S=${FWH_DUP_BUDGET_S:-90}
STUCK_S=5
BURST=/sys/devices/platform/fwh_test_burst
SUB=dup

fault_setup
modprobe fwh_test_burst 2>/dev/null || skip "fwh_test_burst is not in this payload"
at_exit "rmmod fwh_test_burst 2>/dev/null"
at_exit "rm -rf $FWH_FW_DIR/$SUB"
set_fallback_timeout 60

make_blob 1048576 pool.bin 571
mkdir -p "$FWH_FW_DIR/$SUB"
i=0
while [ "$i" -lt "$N" ]; do
	tail -c +$(( i * 16 + 1 )) pool.bin 2>/dev/null | head -c $(( (i % 8) * 9000 + 1 )) >"$FWH_FW_DIR/$SUB/$i.bin"
	i=$((i + 1))
done
echo "$N" >"$BURST/count" || fail "cannot set burst count $N"

lane_bursts() {
	_b=0
	while [ "$(now_ms)" -lt "$t_budget" ]; do
		printf '%s' "$SUB/" >"$BURST/trigger" || { echo "burst $_b refused"; break; }
		while read -r _ok _failed _pending <"$BURST/results" && [ "$_pending" != 0 ]; do
			sleep 0.1
		done
		echo "burst $_b $_ok $_failed"
		_b=$((_b + 1))
	done >bursts.log
}

lane_singles() {
	_j=0
	while [ "$(now_ms)" -lt "$t_budget" ]; do
		_i=$(( (_j * 5) % N ))
		if ! trigger "$SUB/$_i.bin"; then
			echo "single $_j $_i.bin failed"
		elif ! cmp -s "$FWH_TF_DEV" "$FWH_FW_DIR/$SUB/$_i.bin"; then
			echo "single $_j $_i.bin wrong"
		else
			echo "single $_j"
		fi
		_j=$((_j + 1))
	done >singles.log
}

# open_requests: "name:inode" of every open request (a new request under the same name
# has a new directory).
open_requests() {
	for _d in /sys/class/firmware/*/loading; do
		[ -e "$_d" ] || continue
		_d=${_d%/loading}
		echo "${_d##*/}:$(stat -c %i "$_d" 2>/dev/null)"
	done | sort
}

pid=$(fwh_pid)
journal_mark
t0=$(now_ms)
t_budget=$((t0 + BUDGET_S * 1000))
lane_bursts &
pid_b=$!
lane_singles &
pid_a=$!
: >stuck.log
: >seen
while kill -0 "$pid_a" 2>/dev/null || kill -0 "$pid_b" 2>/dev/null; do
	sleep 1
	open_requests >now
	in_flight=$(fwh_prop InFlight)
	if [ -s now ] && [ "$in_flight" = 0 ]; then
		# count consecutive idle looks per open request
		awk 'FILENAME == "seen" { n[$1] = $2; next } { print $1, n[$1] + 1 }' seen now >seen.new
		mv seen.new seen
	else
		: >seen
	fi
	for r in $(awk -v s="$STUCK_S" '$2 >= s { print $1 }' seen); do
		name=${r%:*}
		echo "$r" >>stuck.log
		info "STUCK: $name open for ${STUCK_S} s, the daemon has nothing in flight; fwctl rescan"
		journal_since_mark FIRMWARE="$(echo "$name" | tr '!' /)" | tail -n 3 | sed 's/^/  | /'
		fwctl rescan >/dev/null || info "fwctl rescan failed"
		: >seen
	done
done
wait "$pid_a" "$pid_b"
t_run=$(( $(now_ms) - t0 ))

bursts=$(grep -c . bursts.log)
burst_ok=$(awk '{ s += $3 } END { print s + 0 }' bursts.log)
burst_bad=$(awk '$4 != 0 || NF != 4' bursts.log)
singles_ok=$(grep -c '^single [0-9]*$' singles.log)
singles_bad=$(grep -v '^single [0-9]*$' singles.log)
info "$t_run ms: $bursts bursts of $N ($burst_ok served), $singles_ok single requests served; $(grep -c . stuck.log) dropped"
check "no request dropped (open with the daemon idle): $(tr '\n' ' ' <stuck.log)" test ! -s stuck.log
check "every burst request answered: $(echo "$burst_bad" | head -n 3)" test -z "$burst_bad"
check "every test_firmware request answered byte-exact: $(echo "$singles_bad" | head -n 3)" \
	test -z "$singles_bad"
check "no request left open: '$(pending_requests | tr '\n' ' ')'" test -z "$(pending_requests)"
check "the daemon was not restarted" test "$(fwh_pid)" = "$pid"
[ "$(fwh_pid)" = "$pid" ] || journal_since_mark UNIT=$FWH_UNIT + _SYSTEMD_UNIT=$FWH_UNIT -p notice \
	| grep -v 'Served firmware' | tail -n 30 | sed 's/^/  | /'
checks_done
