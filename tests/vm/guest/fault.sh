# SPDX-License-Identifier: MIT
# shellcheck shell=sh disable=SC2034 # constants and helpers for the cases
#
# Helpers for the fault-injection cases (tests/vm/cases/50-fault-*): fw-helperd killed,
# its files changed and its disk failing under it, the services it talks to restarted.
# A case starts with:
#
#   . /usr/lib/fwh-vmtest/fault.sh
#
# which also brings sleep.sh (fwh_pid, fwh_locks, check, journal_export...) and lib.sh.
# Faults are staged, not raced: the daemon is frozen with SIGSTOP at the moment that
# matters (catch_streaming), so the case does not depend on how fast the guest is.

. /usr/lib/fwh-vmtest/sleep.sh

# src/fw-helperd/fw-helperd-messages.h
MSG_FAILED=6bf1b0e3b5644d88be4123903e848aba
MSG_MISSING=8e1a4f25f6c940d18445a12e569bf723

FWH_FAULT_CONF=$FWH_DROPIN_DIR/60-vmtest-fault.conf

# fault_setup [CONFIG-LINE...]: test_firmware loaded (unloaded at exit when it was not
# before), the fallback forced with a generous kernel timeout, the daemon serving
# $FWH_FW_DIR ([Firmware] section; more lines may follow, sections included), restarted
# with that and at rest. The kernel's per-request console lines cost ~1 ms a character
# under TCG: the console is quiet until exit (the journal still has them).
fault_setup() {
	need_fw_helperd
	systemctl is-active -q systemd-logind.service || fail "systemd-logind is not running"
	if ! lsmod | grep -q '^test_firmware '; then
		at_exit "modprobe -r test_firmware"
	fi
	setup_test_firmware
	set_fallback_timeout 120
	read -r _fwh_loglevel _ </proc/sys/kernel/printk
	at_exit "dmesg -n $_fwh_loglevel"
	dmesg -n 1
	mkdir -p "$FWH_DROPIN_DIR"
	{
		printf '[Firmware]\nSearchPath=%s\n' "$FWH_FW_DIR"
		for _fwh_l in "$@"; do printf '%s\n' "$_fwh_l"; done
	} >"$FWH_FAULT_CONF"
	info "config: $(tr '\n' ' ' <"$FWH_FAULT_CONF")"
	at_exit "rm -f $FWH_FAULT_CONF; systemctl reset-failed $FWH_UNIT 2>/dev/null; systemctl restart $FWH_UNIT"
	fwh_restart
	# A restart within an earlier case's resume window (a suspend just before, the daemon
	# restarted since) carries the window on: the new instance stays "resuming" for the
	# shipped CacheReleaseSec=30s before it is at rest.
	wait_at_rest 45 || { show_locks; fail "daemon not at rest after start: state '$(sleep_state)'"; }
}

# need_disk_tools MODULE...: the modules (tests/vm/kernel.sh guest_modules) and the tools a
# case needs for a block device of its own under a firmware root; skips the case without.
need_disk_tools() {
	for _fwh_m in "$@"; do
		modprobe "$_fwh_m" 2>/dev/null \
			|| skip "module $_fwh_m is not in the guest (tests/vm/kernel.sh guest_modules)"
	done
	for _fwh_c in dmsetup losetup mkfs.ext2 debugfs; do
		command -v "$_fwh_c" >/dev/null || skip "$_fwh_c is not in the guest"
	done
}

# loading_is NAME VALUE: /sys/class/firmware/NAME/loading reads VALUE (1 while a helper
# loads, 0 otherwise); false when the request is gone.
loading_is() {
	{ read -r _fwh_v <"/sys/class/firmware/$1/loading"; } 2>/dev/null && [ "$_fwh_v" = "$2" ]
}

# catch_streaming NAME PID TIMEOUT_S: waits, without sleeping between looks, until the
# request NAME is loading (the daemon wrote "1" and streams, "0" not written yet), then
# freezes PID with SIGSTOP and checks again. 0: PID is stopped mid-load, the request
# still open (resume it with SIGCONT or kill it). 1: the load was over before PID
# stopped (PID is running again) or never started: the caller tries again. A background
# trigger (FWH_TRIGGER_PID) that ends stops the wait.
catch_streaming() {
	_fwh_deadline=$(( $(now_ms) + $3 * 1000 ))
	_fwh_n=0
	while :; do
		if loading_is "$1" 1; then
			kill -STOP "$2" || return 1
			if loading_is "$1" 1; then
				return 0
			fi
			kill -CONT "$2"
			return 1
		fi
		_fwh_n=$((_fwh_n + 1))
		if [ $((_fwh_n % 64)) = 0 ]; then
			kill -0 "$FWH_TRIGGER_PID" 2>/dev/null || return 1
			[ "$(now_ms)" -lt "$_fwh_deadline" ] || return 1
		fi
	done
}

# wait_new_pid OLD_PID TIMEOUT_S: the unit runs a main process other than OLD_PID,
# active; prints it.
_fwh_new_pid() {
	_fwh_p=$(fwh_pid)
	[ -n "$_fwh_p" ] && [ "$_fwh_p" != 0 ] && [ "$_fwh_p" != "$1" ] \
		&& systemctl is-active -q "$FWH_UNIT"
}
wait_new_pid() {
	wait_until "$2" _fwh_new_pid "$1" || return 1
	fwh_pid
}

# fds PID: the daemon's open files, one "fd -> target" a line, for the record.
show_fds() {
	for _fwh_f in /proc/"$1"/fd/*; do
		echo "  | ${_fwh_f##*/} -> $(readlink "$_fwh_f")"
	done
}
