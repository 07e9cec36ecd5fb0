#!/bin/bash
# SPDX-License-Identifier: MIT
# Profile, not a test (bench/profile.sh carries it and perf into the guest): fw-helperd
# as shipped answers a series of 4 KiB requests, of 256 KiB ones, then of missing
# names, under `perf record -a -g`. Prints the CPU share of every process over each
# series, fw-helperd's hottest symbols, the driver's wait next to the daemon's own
# FW_DURATION_USEC (from taking the event to the answer), and the system calls the
# daemon made per request (`perf trace -s`, in a series of its own).
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/bench.sh

BUNDLE=/usr/lib/fwh-vmtest/cases/perf-bundle.tar
[ -f "$BUNDLE" ] || skip "no perf bundle (run bench/profile.sh)"
need_fw_helperd
N=60

P=$FWH_CASE_TMP/perf
mkdir -p "$P"
tar -xf "$BUNDLE" -C "$P"
export LD_LIBRARY_PATH=$P/lib
"$P/perf" --version || fail "perf does not run in the guest"

# as in 90-bench-peers.sh: the serial console would cost ~1 ms per character
read -r _fwh_loglevel _ </proc/sys/kernel/printk
at_exit "dmesg -n $_fwh_loglevel"
dmesg -n 1
setup_test_firmware
mask_udev_firmware_rule
mkdir -p /etc/fw-helperd/fw-helperd.conf.d
printf '[Firmware]\nSearchPath=%s\n' "$FWH_FW_DIR" >/etc/fw-helperd/fw-helperd.conf.d/50-profile.conf
at_exit "rm -f /etc/fw-helperd/fw-helperd.conf.d/50-profile.conf"
set_fallback_timeout 60
# in a directory, as most firmware names are (vendor/...); the peers bench's are too
mkdir -p "$FWH_FW_DIR/vendor"
make_blob 4096 "$FWH_FW_DIR/vendor/profile-4k.bin" 91
make_blob 262144 "$FWH_FW_DIR/vendor/profile-256k.bin" 92
at_exit "rm -rf $FWH_FW_DIR/vendor"
systemctl restart fw-helperd.service
wait_until 10 systemctl is-active -q fw-helperd.service || fail "fw-helperd did not start"
trigger vendor/profile-4k.bin
trigger vendor/profile-256k.bin

median() { stats | cut -d' ' -f1; }

# profile LABEL NAME: N requests for NAME under perf; the driver's wait of each.
profile() {
	journal_mark
	"$P/perf" record -q -a -g -F 1000 -o "$P/$1.data" -- bash -c '
		for i in $(seq '"$N"'); do
			t0=$EPOCHREALTIME
			printf %s '"$2"' >'"$FWH_TF"'/trigger_request 2>/dev/null
			t1=$EPOCHREALTIME
			echo $(( ${t1/./} - ${t0/./} ))
		done' >"$P/$1.us" 2>"$P/$1.err" || { cat "$P/$1.err"; fail "perf record"; }
	sleep 1
	info ""
	info "## $1: $N requests for $2"
	info "driver's wait, median: $(median <"$P/$1.us") us;" \
		"fw-helperd's FW_DURATION_USEC, median: $(journal_since_mark -o cat \
			--output-fields=FW_DURATION_USEC FIRMWARE="$2" | median) us"
	info "CPU samples by process:"
	"$P/perf" report -i "$P/$1.data" --no-children --sort comm --stdio -g none 2>/dev/null |
		awk 'NF && !/^#/ && n++ < 12'
	info "fw-helperd's hottest symbols:"
	"$P/perf" report -i "$P/$1.data" --no-children --comm fw-helperd --sort dso,sym \
		--stdio -g none 2>/dev/null | awk 'NF && !/^#/ && n++ < 15'
}

# requests NAME: N requests for NAME, one at a time, as the driver makes them
requests() {
	for i in $(seq "$N"); do
		printf %s "$1" >"$FWH_TF/trigger_request" 2>/dev/null
	done
}

# syscalls LABEL NAME: the daemon's system calls per request for NAME, all threads,
# from a series under `perf trace -s` of its own (tracing slows every call it counts).
syscalls() {
	local pid
	pid=$(systemctl show -P MainPID fw-helperd.service)
	"$P/perf" trace -s -p "$pid" -o "$P/$1.trace" &
	local tracer=$!
	sleep 2	# attached
	requests "$2"
	sleep 1
	kill -INT "$tracer"
	wait "$tracer" || true
	info "system calls per request ($1, $N requests), by thread:"
	awk -v n="$N" '
		/\(.*\), [0-9]+ events/ { if (t) printf "  %-40s %6.1f\n", t, c / n; t = $1; c = 0; next }
		$1 ~ /^[a-z_0-9]+$/ && $2 ~ /^[0-9]+$/ { c += $2; printf "    %-20s %6.1f\n", $1, $2 / n }
		END { if (t) printf "  %-40s %6.1f\n", t, c / n }' "$P/$1.trace"
}

profile served vendor/profile-4k.bin
profile served-256k vendor/profile-256k.bin
profile missing vendor/profile-missing.bin
syscalls served vendor/profile-4k.bin
syscalls served-256k vendor/profile-256k.bin
syscalls missing vendor/profile-missing.bin
