#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/phases.sh's case: the system calls of a requester and of one helper at a time
# (fw-helperd on EventSource=kernel, then the floor), udevd stopped, for N requests of
# 4 KiB and N of a missing name, printed as "T <run> <ftrace line>" for bench/phases.py.
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/bench.sh
need_fw_helperd
FLOOR=/usr/lib/fwh-vmtest/peers/floor
[ -x "$FLOOR" ] || skip "no floor peer (run bench/phases.sh)"
N=30
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs tracefs $T
[ -d $T/events/raw_syscalls ] || skip "the kernel has no raw_syscalls trace events"

# Under TCG the serial console costs ~1 ms per character (bench/README.md).
read -r _fwh_loglevel _ </proc/sys/kernel/printk
at_exit "dmesg -n $_fwh_loglevel"
dmesg -n 1
setup_test_firmware
mask_udev_firmware_rule
conf=/etc/fw-helperd/fw-helperd.conf.d/50-phases.conf
mkdir -p "${conf%/*}"
printf '[Firmware]\nSearchPath=%s\n[Service]\nEventSource=kernel\n' "$FWH_FW_DIR" >"$conf"
at_exit "rm -rf '$conf' '$FWH_FW_DIR/vendor'"
set_fallback_timeout 60
# in a directory, as most firmware names are (vendor/...); the peers bench's are too
mkdir -p "$FWH_FW_DIR/vendor"
make_blob 4096 "$FWH_FW_DIR/vendor/phases-4k.bin" 92
systemctl stop systemd-udevd.service systemd-udevd-kernel.socket systemd-udevd-control.socket
at_exit "systemctl start systemd-udevd-kernel.socket systemd-udevd-control.socket systemd-udevd.service"

# traced RUN HELPER_PID NAME: N requests for NAME, 20 ms apart, from a shell whose system
# calls are traced with the helper's (all its threads), on the trace's one clock.
traced() {
	local go=$FWH_CASE_TMP/go req
	rm -f "$go"
	bash -c 'while [ ! -e '"$go"' ]; do sleep 0.05; done
		for i in $(seq '"$N"'); do
			printf %s '"$3"' >'"$FWH_TF"'/trigger_request 2>/dev/null
			sleep 0.02
		done' &
	req=$!
	echo 0 >$T/tracing_on
	echo >$T/trace
	echo 16384 >$T/buffer_size_kb
	echo "$req $(ls "/proc/$2/task" | tr '\n' ' ')" >$T/set_event_pid
	echo 1 >$T/events/raw_syscalls/enable
	echo 1 >$T/tracing_on
	touch "$go"
	wait "$req"
	sleep 0.5
	echo 0 >$T/tracing_on
	echo 0 >$T/events/raw_syscalls/enable
	echo >$T/set_event_pid
	echo "=== trace $1 req=$req helper=$2"
	grep -v '^#' $T/trace | sed "s/^/T $1 /"
}

systemctl restart fw-helperd.service
wait_until 10 systemctl is-active -q fw-helperd.service || fail "fw-helperd did not start"
trigger vendor/phases-4k.bin
pid=$(systemctl show -P MainPID fw-helperd.service)
traced fwhd "$pid" vendor/phases-4k.bin
traced fwhd-miss "$pid" vendor/phases-missing.bin
systemctl stop fw-helperd.service
"$FLOOR" "$FWH_FW_DIR" /usr/lib/firmware >"$FWH_CASE_TMP/floor.log" 2>&1 &
pid=$!
at_exit "kill $pid 2>/dev/null"
sleep 0.5
trigger vendor/phases-4k.bin
traced floor "$pid" vendor/phases-4k.bin
traced floor-miss "$pid" vendor/phases-missing.bin
