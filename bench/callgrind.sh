#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/callgrind.sh [N]
#
# A figure that noise cannot move: the instructions fw-helperd executes per
# request, counted by valgrind's callgrind on the host (no VM, no kernel
# fallback: a fixture sysfs tree whose `loading` and `data` are regular files,
# as in tests/host/test-daemon.py). The daemon starts with N (default 20), then
# 2N pending requests of one kind, answers them from its start-up scan and is
# stopped; (I(2N) - I(N)) / N is the cost of one request without start-up, and
# a run with no request at all the cost of starting and stopping. Kinds:
#   4k, 1m    served, names the daemon served before (its registry of served
#             names, kept in RUNTIME_DIRECTORY across restarts, has them)
#   missing   no such file: answered -1
#   4k-new    served, each name the first time: the registry is rewritten
#             after each (this figure grows with the number of names held)
# Prints those and, per request, the functions with the most instructions of
# their own (callgrind_annotate, 2N run minus N run), and those of start-up.
#
# User-space instructions only (what the kernel does for a system call is not
# counted); all threads together. The daemon runs as the tests run it:
# --event-source=none --no-bus, messages to stderr (not the journal).
#
#   FWH_CALLGRIND_BUILDDIR   build dir (default build-callgrind, debugoptimized)
#   FWH_CALLGRIND_TOP        functions shown per kind (default 12)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
case ${1:-} in
-h|--help) sed -n '4,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
esac
n=${1:-20}
top=${FWH_CALLGRIND_TOP:-12}
build=${FWH_CALLGRIND_BUILDDIR:-$repo/build-callgrind}

command -v valgrind >/dev/null || { echo "callgrind: needs valgrind (apt install valgrind)" >&2; exit 1; }
[ -f "$build/build.ninja" ] || meson setup "$build" "$repo" >"$repo/.callgrind-setup.log" 2>&1 \
	|| { cat "$repo/.callgrind-setup.log" >&2; exit 1; }
rm -f "$repo/.callgrind-setup.log"
meson compile -C "$build" fw-helperd >/dev/null
daemon=$build/src/fw-helperd/fw-helperd

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/fw"
head -c 4096 /dev/urandom >"$work/fw/4k.bin"
head -c 1048576 /dev/urandom >"$work/fw/1m.bin"
printf '[Firmware]\nSearchPath=%s\n' "$work/fw" >"$work/fw-helperd.conf"

# fixture KIND COUNT [keep]: a fresh sysfs tree with COUNT pending requests,
# distinct names (the kernel names each request's directory after its
# firmware); with keep, the daemon's registry of served names stays.
fixture() {
	local sys=$work/sys i name dev
	rm -rf "$sys" "$work/answered"
	if [ "${3:-}" = keep ]; then rm -f "$work/run/listening"; else rm -rf "$work/run"; fi
	mkdir -p "$sys/class/firmware" "$sys/module/firmware_class/parameters" "$work/answered" "$work/run"
	echo 60 >"$sys/class/firmware/timeout"
	echo >"$sys/module/firmware_class/parameters/path"
	for i in $(seq "$2"); do
		name=bench-$1-$i.bin
		[ "$1" = missing ] || ln -f "$work/fw/$1.bin" "$work/fw/$name"
		dev=$sys/devices/virtual/misc/bench$i/firmware/$name
		mkdir -p "$dev"
		: >"$dev/loading"
		: >"$dev/data"
		printf 'FIRMWARE=%s\nTIMEOUT=60\n' "$name" >"$dev/uevent"
		ln -s "$dev" "$sys/class/firmware/$name"
	done
}

# answered: every request's `loading` ends in its final word (0 or -1)
answered() {
	local l v
	for l in "$work"/sys/devices/virtual/misc/*/firmware/*/loading; do
		[ -e "$l" ] || continue
		v=$(cat "$l")
		case $v in *0|*-1) ;; *) return 1 ;; esac
	done
}

# measure KIND COUNT OUT [known]: the daemon under callgrind until COUNT
# requests are answered; then, as the kernel would, the answered directories
# go away and the daemon is stopped. known: the daemon served the same names
# for the same devices before (a run without valgrind), as a machine's daemon
# has after its first boot: its registry of served names is not rewritten.
measure() {
	if [ "${4:-}" = known ]; then
		fixture "$1" "$2"
		answer "$1" "$2" "$3.first"
		fixture "$1" "$2" keep
	else
		fixture "$1" "$2"
	fi
	answer "$1" "$2" "$3" valgrind --tool=callgrind --callgrind-out-file="$3"
}

# answer KIND COUNT OUT [WRAPPER...]: one run of the daemon over the fixture
answer() {
	local kind=$1 count=$2 out=$3 pid t l
	shift 3
	RUNTIME_DIRECTORY=$work/run "$@" \
		"$daemon" --config "$work/fw-helperd.conf" --config-dir "$work/none" \
		--event-source=none --no-bus --sysfs-root "$work/sys" \
		--firmware-prefix "$work/empty-prefix" --log-target=stderr \
		</dev/null >/dev/null 2>"$out.log" &
	pid=$!
	t=$((SECONDS + 300))
	until [ -e "$work/run/listening" ] && answered; do
		kill -0 "$pid" 2>/dev/null || { cat "$out.log" >&2; echo "callgrind: the daemon died" >&2; exit 1; }
		[ $SECONDS -lt $t ] || { kill "$pid"; echo "callgrind: $kind x $count not answered in 300 s" >&2; exit 1; }
		sleep 0.2
	done
	for l in "$work"/sys/class/firmware/*; do
		[ -L "$l" ] || continue
		mv "$(readlink "$l")" "$work/answered/${l##*/}"
		rm "$l"
	done
	kill -TERM "$pid"
	wait "$pid" || { cat "$out.log" >&2; echo "callgrind: the daemon exited $?" >&2; exit 1; }
	check_answers "$kind" "$count"
}

# check_answers KIND COUNT: served byte-exact and committed, or aborted
check_answers() {
	local d want
	# a regular file keeps what each write left: "1" then "0" may read back as "10"
	if [ "$1" = missing ]; then want='*-1'; else want='*[!-]0'; fi
	for d in "$work"/answered/*; do
		[ -e "$d" ] || continue
		# shellcheck disable=SC2053
		[[ "$(cat "$d/loading")" == $want ]] || { echo "callgrind: $d answered '$(cat "$d/loading")'" >&2; exit 1; }
		[ "$1" = missing ] || cmp -s "$d/data" "$work/fw/$1.bin" \
			|| { echo "callgrind: $d: data differs" >&2; exit 1; }
	done
	[ "$(ls "$work/answered" | wc -l)" = "$2" ] || { echo "callgrind: not all $2 answered" >&2; exit 1; }
}

total() { sed -n 's/^totals: *//p' "$1"; }

# self OUT [yes]: "instructions<TAB>file:function" for every function; with yes,
# inclusive of what it calls
self() {
	callgrind_annotate --inclusive="${2:-no}" --auto=no --threshold=100 "$1" </dev/null 2>/dev/null \
		| awk '/^ *[0-9][0-9,]* \( *[0-9.]+%\)  / && !/PROGRAM TOTALS/ {
			v = $1; gsub(",", "", v); sub(/^ *[0-9,]+ \( *[0-9.]+%\) +/, ""); sub(/ \[.*\]$/, "")
			sub(/^.*\//, ""); print v "\t" $0 }'
}

measure none 0 "$work/start.out"
start=$(total "$work/start.out")
printf '# fw-helperd %s, %s; valgrind %s; N = %d\n' \
	"$(git -C "$repo" describe --always --dirty 2>/dev/null || echo '?')" "$(uname -m)" \
	"$(valgrind --version)" "$n"
# label, blob (or missing), known|new
kinds="4k 4k known
1m 1m known
missing missing new
4k-new 4k new"
printf '%-10s %14s %14s %16s\n' request "I(N)" "I(2N)" "per request"
while read -r label blob mode; do
	measure "$blob" "$n" "$work/$label-1.out" "$mode"
	measure "$blob" $((n * 2)) "$work/$label-2.out" "$mode"
	a=$(total "$work/$label-1.out")
	b=$(total "$work/$label-2.out")
	printf '%-10s %14d %14d %16d\n' "$label" "$a" "$b" $(( (b - a) / n ))
	[ "$label" = 4k ] && from_n=$(( a - n * ((b - a) / n) ))
done <<<"$kinds"
printf '%-10s %14d %14s %16s\n' start-up "$start" - -
printf '# start-up and stop with no request: %d; I(N) - N x per request (4k): %d\n' "$start" "$from_n"

# per_request LABEL INCLUSIVE [GREP]: instructions per request by function
per_request() {
	{ self "$work/$1-1.out" "$2" | sed 's/^/1\t/'; self "$work/$1-2.out" "$2" | sed 's/^/2\t/'; } \
		| grep -E "${3:-.}" \
		| awk -F'\t' -v n="$n" '{ i[$1, $3] += $2; f[$3] = 1 }
			END { for (k in f) { d = (i[2, k] - i[1, k]) / n; if (d >= 1) printf "%10.0f  %s\n", d, k } }' \
		| sort -rn | awk -v t="$top" 'NR <= t'
}

while read -r label _; do
	printf '\n## %s: instructions per request by function (self), top %d\n' "$label" "$top"
	per_request "$label" no
	printf '## %s: the same, inclusive, fw-helperd'"'"'s own functions\n' "$label"
	per_request "$label" yes '	(fw-helperd-[a-z]*|log|[a-z]*-util)\.c:'
done <<<"$kinds"
printf '\n## start-up and stop, no request: functions (self), top %d\n' "$top"
self "$work/start.out" | awk -F'\t' '{ printf "%10d  %s\n", $1, $2 }' | sort -rn | awk -v t="$top" 'NR <= t'
