# SPDX-License-Identifier: MIT
# shellcheck shell=sh
#
# Helpers for VM test cases. A case is a script in tests/vm/cases/ that runs
# as root inside the guest and starts with:
#
#   . /usr/lib/fwh-vmtest/lib.sh
#
# Exit 0 = pass, 77 = skip (use `skip REASON`), anything else = fail. Its
# output is shown only when it fails, so say what you check. POSIX sh: dash
# and bash cases can both source this.

# shellcheck disable=SC2034 # for the cases
FWH_VMTEST_DIR=/usr/lib/fwh-vmtest
# shellcheck disable=SC2034
FWH_PEERS=$FWH_VMTEST_DIR/peers
# test_firmware's sysfs directory and the device it reads back through.
FWH_TF=/sys/devices/virtual/misc/test_firmware
FWH_TF_DEV=/dev/test_firmware
FWH_FW_CONFIG=/proc/sys/kernel/firmware_config
# Where cases put firmware served by helpers: outside the kernel's own search
# path (/lib/firmware...), so requests really go through the fallback.
FWH_FW_DIR=/srv/firmware
# A scratch dir of this case, fresh for every case (set by the runner).
: "${FWH_CASE_TMP:=/tmp}"
# Disk bed: a dir of this case that survives its reboots, and which boot of
# the case this is (1, then 2 after its first reboot_then_continue).
: "${FWH_CASE_STATE:=$FWH_CASE_TMP}"
: "${FWH_BOOT:=1}"

## Reporting ---------------------------------------------------------------

info() { echo "$*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
# The runner reports the text after "SKIP: " as the reason.
skip() { echo "SKIP: $*"; exit 77; }

assert_eq() { # ACTUAL EXPECTED [WHAT]
	[ "$1" = "$2" ] || fail "${3:-value}: got '$1', expected '$2'"
}

assert_files_eq() { # ACTUAL EXPECTED [WHAT]
	cmp -s "$1" "$2" || fail "${3:-$1}: differs from $2 ($(stat -c %s "$1" 2>/dev/null || echo missing) vs $(stat -c %s "$2") bytes; $(cmp "$1" "$2" 2>&1 | head -n1))"
}

assert_true() { # CMD... : CMD must succeed
	"$@" || fail "expected success: $*"
}

assert_fails() { # CMD... : CMD must fail
	if "$@"; then fail "expected failure: $*"; fi
}

assert_lt() { # A B [WHAT] : integer A < B
	[ "$1" -lt "$2" ] || fail "${3:-value}: $1 is not below $2"
}

## Cleanup: run in reverse order of registration when the case exits --------

_fwh_cleanups=
at_exit() { # CMD (a string, evaluated at exit)
	_fwh_cleanups="$1
$_fwh_cleanups"
}
_fwh_run_cleanups() {
	_fwh_rc=$?
	trap - EXIT
	# Each cleanup runs even if an earlier one fails.
	echo "$_fwh_cleanups" | while IFS= read -r _fwh_c; do
		[ -n "$_fwh_c" ] && { eval "$_fwh_c" || echo "cleanup failed: $_fwh_c" >&2; }
	done
	exit "$_fwh_rc"
}
trap _fwh_run_cleanups EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

## Time and polling -----------------------------------------------------

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

wait_until() { # TIMEOUT_S CMD... : poll CMD every 0.1 s; 1 on timeout
	_fwh_deadline=$(( $(now_ms) + $1 * 1000 ))
	shift
	until "$@"; do
		[ "$(now_ms)" -lt "$_fwh_deadline" ] || return 1
		sleep 0.1
	done
}

## What processes cost the scheduler ---------------------------------------
# Each sums over all the processes' threads: a worker that wakes counts as much as
# the main thread. A PID that is gone adds nothing.

# on_cpu_ns PID...: how long they ran on a CPU, in ns
on_cpu_ns() { _fwh_schedstat 1 "$@"; }
# sched_runs PID...: how many times they were put on a CPU
sched_runs() { _fwh_schedstat 3 "$@"; }

_fwh_schedstat() { # 1|3 PID...: that column of /proc/PID/task/TID/schedstat, summed
	_fwh_col=$1 _fwh_n=0
	shift
	for _fwh_pid; do
		for _fwh_f in /proc/"$_fwh_pid"/task/*/schedstat; do
			[ -r "$_fwh_f" ] && read -r _fwh_1 _fwh_2 _fwh_3 <"$_fwh_f" || continue
			case $_fwh_col in
			1) _fwh_n=$((_fwh_n + _fwh_1)) ;;
			3) _fwh_n=$((_fwh_n + _fwh_3)) ;;
			esac
		done
	done
	echo "$_fwh_n"
}

# switches voluntary|nonvoluntary PID...: context switches, summed; voluntary: the
# thread went to sleep, nonvoluntary: it was preempted
switches() {
	_fwh_key=$1_ctxt_switches: _fwh_n=0
	shift
	for _fwh_pid; do
		for _fwh_f in /proc/"$_fwh_pid"/task/*/status; do
			[ -r "$_fwh_f" ] || continue
			while read -r _fwh_k _fwh_v _; do
				[ "$_fwh_k" = "$_fwh_key" ] && _fwh_n=$((_fwh_n + _fwh_v))
			done <"$_fwh_f"
		done
	done
	echo "$_fwh_n"
}

## Journal ----------------------------------------------------------------

# journal_mark: remember the journal's current end; wait_journal and
# journal_since_mark then only look at later entries, so an entry from an
# earlier case or step cannot match. The mark is an entry of our own: with
# matches, journalctl 252 --after-cursor skips the first matching entry
# when the cursor's entry does not match, so --cursor on a marker it is.
journal_mark() {
	_fwh_mark="fwh-vmtest-mark-$$-$(now_ms)"
	logger -t fwh-vmtest-mark "$_fwh_mark"
	wait_until 10 _fwh_mark_cursor || fail "journal mark did not show up"
}
_fwh_mark_cursor() {
	FWH_JOURNAL_CURSOR=$(journalctl -q -b -n 1 -o export --no-pager \
		SYSLOG_IDENTIFIER=fwh-vmtest-mark MESSAGE="$_fwh_mark" | sed -n 's/^__CURSOR=//p')
	[ -n "$FWH_JOURNAL_CURSOR" ]
}

# journal_since_mark [MATCH...] [journalctl options]: matching entries since
# journal_mark (the whole boot without one), short-monotonic format.
journal_since_mark() {
	if [ -n "${FWH_JOURNAL_CURSOR:-}" ]; then
		journalctl -q -b --no-pager -o short-monotonic --cursor="$FWH_JOURNAL_CURSOR" "$@" \
			| grep -vF -e "$_fwh_mark"
	else
		journalctl -q -b --no-pager -o short-monotonic "$@"
	fi
}

_fwh_journal_has() {
	journal_since_mark "$@" | grep -q .
}

wait_journal() { # TIMEOUT_S MATCH... : journalctl matches, e.g. MESSAGE_ID=... FIRMWARE=x
	_fwh_t=$1
	shift
	wait_until "$_fwh_t" _fwh_journal_has "$@" \
		|| fail "no journal entry matching '$*' within ${_fwh_t}s"
}

## Firmware requests through test_firmware --------------------------------

# setup_test_firmware: load test_firmware and make request_firmware() fall
# back to sysfs (uevent + /sys/class/firmware/NAME/{loading,data}) when the
# kernel itself finds no file. Undone when the case exits.
setup_test_firmware() {
	modprobe test_firmware || fail "modprobe test_firmware"
	wait_until 5 test -w "$FWH_TF/trigger_request" || fail "$FWH_TF did not appear"
	wait_until 5 test -r "$FWH_TF_DEV" || fail "$FWH_TF_DEV did not appear"
	_fwh_old_force=$(cat "$FWH_FW_CONFIG/force_sysfs_fallback")
	echo 1 >"$FWH_FW_CONFIG/force_sysfs_fallback"
	at_exit "echo $_fwh_old_force >$FWH_FW_CONFIG/force_sysfs_fallback"
	_fwh_old_timeout=$(cat /sys/class/firmware/timeout)
	at_exit "echo $_fwh_old_timeout >/sys/class/firmware/timeout"
	mkdir -p "$FWH_FW_DIR"
}

# setup_test_firmware_stock: load test_firmware and leave the firmware
# loader's settings as the system has them (what an installed package left
# in force_sysfs_fallback is what the case judges).
setup_test_firmware_stock() {
	modprobe test_firmware || fail "modprobe test_firmware"
	wait_until 5 test -w "$FWH_TF/trigger_request" || fail "$FWH_TF did not appear"
	wait_until 5 test -r "$FWH_TF_DEV" || fail "$FWH_TF_DEV did not appear"
	mkdir -p "$FWH_FW_DIR"
}

# set_fallback_timeout SECONDS: how long the kernel waits for a helper to
# answer a uevent-announced request (default 60; 0 = the maximum).
set_fallback_timeout() {
	echo "$1" >/sys/class/firmware/timeout
}

# make_blob SIZE FILE [SEED]: SIZE bytes of deterministic content; SEED
# (0-9999999) gives another content. Every 16-byte line within a MiB
# differs, and each MiB starts with its own number, so a lost, doubled or
# shifted page or MiB shows. Built from one cached MiB: seq alone takes
# ~6 s for 16 MiB under TCG, this ~1 s.
make_blob() {
	_fwh_seed=${3:-0}
	_fwh_chunk=$FWH_CASE_TMP/.blob-chunk-$_fwh_seed
	mkdir -p "$(dirname "$2")"
	[ -s "$_fwh_chunk" ] \
		|| seq -f '%015.0f' $((_fwh_seed * 1000000000)) $((_fwh_seed * 1000000000 + 65535)) >"$_fwh_chunk"
	_fwh_k=0
	while [ $((_fwh_k * 1048576)) -lt "$1" ]; do
		printf '%07d-%07d\n' "$_fwh_seed" "$_fwh_k"
		tail -c +17 "$_fwh_chunk" 2>/dev/null # head closes the pipe at SIZE
		_fwh_k=$((_fwh_k + 1))
	done | head -c "$1" >"$2"
	[ "$(stat -c %s "$2")" -eq "$1" ] || fail "make_blob $1 $2"
}

# trigger NAME: request_firmware(NAME) via test_firmware, blocking until the
# request completes; fails if the load failed. NAME is written without a
# newline (the kernel takes the bytes as they are).
trigger() {
	printf '%s' "$1" >"$FWH_TF/trigger_request" 2>/dev/null
}

# trigger_ms NAME: like trigger, printing the elapsed milliseconds; the exit
# status is trigger's.
trigger_ms() {
	_fwh_t0=$(now_ms)
	trigger "$1"
	_fwh_rc=$?
	echo $(( $(now_ms) - _fwh_t0 ))
	return $_fwh_rc
}

# kernel_answer_ms NAME: milliseconds from test_firmware's last request for NAME to its
# answer, by the kernel's own clock (test_firmware logs both ends): the forks of a shell
# timing around the request cost hundreds of milliseconds under TCG.
kernel_answer_ms() {
	_fwh_k0=$(dmesg | grep -F "test_firmware: loading '$1'" | tail -n 1 \
		| sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p')
	_fwh_k1=$(dmesg | grep -E "test_firmware: (loaded:|load of '$1' failed)" | tail -n 1 \
		| sed -n 's/^\[ *\([0-9.]*\)\].*/\1/p')
	awk -v a="$_fwh_k0" -v b="$_fwh_k1" 'BEGIN { printf "%d\n", (b - a) * 1000 }'
}

# trigger_async NAME: request_firmware_nowait() with a uevent, waited for.
trigger_async() {
	printf '%s' "$1" >"$FWH_TF/trigger_async_request" 2>/dev/null
}

# trigger_bg ATTR NAME: start a trigger write in the background; its pid is
# in FWH_TRIGGER_PID, collect it with wait_trigger.
trigger_bg() {
	( printf '%s' "$2" >"$FWH_TF/$1" ) 2>/dev/null &
	FWH_TRIGGER_PID=$!
}

# trigger_custom NAME: request_firmware_nowait(FW_ACTION_NOUEVENT): the
# "custom fallback", announced by no uevent and with no timeout, so it is
# started in the background; answer it via /sys/class/firmware/NAME/ and
# collect the result with wait_trigger.
trigger_custom() {
	trigger_bg trigger_custom_fallback "$1"
}

# wait_trigger TIMEOUT_S: wait for the background trigger; on timeout abort
# every pending request (a blocked writer cannot be killed) and fail.
# Returns the trigger's exit status.
wait_trigger() {
	if ! wait_until "$1" _fwh_trigger_done; then
		abort_pending_requests
		wait "$FWH_TRIGGER_PID"
		fail "firmware request still pending after ${1}s"
	fi
	wait "$FWH_TRIGGER_PID"
}
_fwh_trigger_done() { ! kill -0 "$FWH_TRIGGER_PID" 2>/dev/null; }

# abort_pending_requests: answer -1 to every open fallback request.
abort_pending_requests() {
	for _fwh_l in /sys/class/firmware/*/loading; do
		[ -e "$_fwh_l" ] && echo -1 >"$_fwh_l" 2>/dev/null
	done
	return 0
}

# pending_requests: names of fallback requests waiting for an answer (the
# sysfs directory name; '/' in a firmware name appears as '!').
pending_requests() {
	for _fwh_l in /sys/class/firmware/*/loading; do
		[ -e "$_fwh_l" ] && basename "$(dirname "$_fwh_l")"
	done
	return 0
}

# readback FILE: what test_firmware received by the last successful
# trigger, from its misc device (empty after a failed one).
readback() {
	cat "$FWH_TF_DEV" >"$1"
}

# assert_served NAME FILE: trigger NAME and check the kernel got FILE's
# bytes exactly.
assert_served() {
	trigger "$1" || fail "request for $1 failed"
	readback "$FWH_CASE_TMP/readback"
	assert_files_eq "$FWH_CASE_TMP/readback" "$2" "firmware $1 as received"
}

## udev ---------------------------------------------------------------------

# mask_udev_firmware_rule: Debian's udev answers every fallback request with
# loading=-1 (50-firmware.rules) before a helper can. A same-named file in
# /run/udev/rules.d replaces it until the case exits.
mask_udev_firmware_rule() {
	mkdir -p /run/udev/rules.d
	echo "# masked by the VM test bed" >/run/udev/rules.d/50-firmware.rules
	at_exit "rm -f /run/udev/rules.d/50-firmware.rules; udevadm control --reload"
	udevadm control --reload
}

# install_udev_rule NAME TEXT: a rule file in /run/udev/rules.d, removed when
# the case exits.
install_udev_rule() {
	mkdir -p /run/udev/rules.d
	printf '%s\n' "$2" >"/run/udev/rules.d/$1"
	at_exit "rm -f /run/udev/rules.d/$1; udevadm control --reload"
	udevadm control --reload
}

# without_fw_helperd: run the rest of the case as if fw-helperd were not
# installed (baselines, peers): the service masked and stopped (its udev
# rule would start it again on the next request), and its udev rule moved
# aside, which also unmasks Debian's stub. All restored at exit.
without_fw_helperd() {
	if systemctl cat fw-helperd.service >/dev/null 2>&1; then
		if systemctl is-active -q fw-helperd.service; then
			at_exit "systemctl start fw-helperd.service"
		fi
		systemctl mask --runtime --now fw-helperd.service >/dev/null 2>&1 \
			|| fail "cannot mask fw-helperd.service"
		at_exit "systemctl unmask --runtime fw-helperd.service >/dev/null 2>&1"
	fi
	_fwh_r=/etc/udev/rules.d/50-firmware.rules
	if [ -e "$_fwh_r" ]; then
		mv "$_fwh_r" "$FWH_CASE_TMP/aside-50-firmware.rules"
		at_exit "mv '$FWH_CASE_TMP/aside-50-firmware.rules' '$_fwh_r'; udevadm control --reload"
	fi
	udevadm control --reload
}

## Misc -------------------------------------------------------------------

# main_pid UNIT: the unit's main process; 0 when it is not running
main_pid() { systemctl show -p MainPID --value "$1"; }

# as_user CMD...: run as the unprivileged test user (no login session).
as_user() {
	runuser -u fwuser -- "$@"
}

# kernel_at_least MAJOR.MINOR
kernel_at_least() {
	_fwh_have=$(uname -r | cut -d. -f1-2)
	[ "$(printf '%s\n%s\n' "$1" "$_fwh_have" | sort -V | head -n1)" = "$1" ]
}

# need_disk_bed: skip unless the guest is the disk bed (run-disk.sh: an
# installed Debian on a virtual disk, which can reboot).
need_disk_bed() {
	[ "${FWH_BED:-fast}" = disk ] || skip "needs the disk bed (tests/vm/run.sh --bed disk)"
}

# reboot_then_continue: end this run of the case; the runner reboots the
# guest (clean poweroff, then the current /boot/initrd.img-$(uname -r)) once
# every selected case of the same decade has had its turn, and runs this
# case again with FWH_BOOT one higher. Keep what the next boot needs in
# $FWH_CASE_STATE. at_exit cleanups run before the reboot.
reboot_then_continue() {
	need_disk_bed
	info "reboot requested (this was boot $FWH_BOOT of $FWH_CASE)"
	exit 75
}

# need_fw_helperd: skip the case when the daemon under test is not installed
# (the build may not have produced it yet).
need_fw_helperd() {
	command -v fw-helperd >/dev/null 2>&1 || [ -x /usr/lib/fw-helperd/fw-helperd ] \
		|| skip "fw-helperd is not installed in this payload"
}
