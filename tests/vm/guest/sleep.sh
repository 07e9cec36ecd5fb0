# SPDX-License-Identifier: MIT
# shellcheck shell=sh disable=SC2034 # constants and helpers for the cases
#
# Helpers for the suspend/resume cases (tests/vm/cases/2x-sleep-*): fw-helperd with
# the real systemd-logind, suspend cycles through /sys/power/pm_test, a read-only
# root staged per VM-NOTES. A case starts with:
#
#   . /usr/lib/fwh-vmtest/sleep.sh
#
# which also brings lib.sh. Checks that can go on after a failure use `check`;
# `checks_done` ends the case with the verdict.

. /usr/lib/fwh-vmtest/lib.sh

# MESSAGE_IDs: src/fw-helperd/fw-helperd-messages.h, and systemd-sleep's own.
MSG_SERVED=d827878f321d40adab22e4709b89784a
MSG_DEFERRED=a9537afa11e24994b5c71dcf6fa808ad
MSG_PREWARMED=1a0e0dd3860049619a5a7827e3849295
MSG_CACHE_RELEASED=ec8afbbbde7440aeaf1a2d892b362b3e
MSG_SLEEP_START=6bbd95ee977941e497c48be27c254128
MSG_SLEEP_STOP=8811e6df2a8e40f58a94cea26f8ebf14

FWH_UNIT=fw-helperd.service
FWH_DROPIN_DIR=/etc/fw-helperd/fw-helperd.conf.d
FWH_RUNTIME=/run/fw-helperd

## Checks that do not end the case ------------------------------------------

_fwh_failed=0
check() { # WHAT CMD... : CMD must succeed; a failure is reported, the case goes on
	_fwh_what=$1
	shift
	if "$@"; then
		echo "ok: $_fwh_what"
	else
		echo "FAIL: $_fwh_what" >&2
		_fwh_failed=$((_fwh_failed + 1))
	fi
}
check_fail() { # MSG : a failed check with its own message
	echo "FAIL: $*" >&2
	_fwh_failed=$((_fwh_failed + 1))
}
checks_done() {
	[ "$_fwh_failed" -eq 0 ] || fail "$_fwh_failed check(s) failed"
}

## The daemon ---------------------------------------------------------------

fwh_pid() { main_pid "$FWH_UNIT"; }

# fwh_prop NAME: a property of org.fwhelperd1.Manager, value only ("idle", 3).
fwh_prop() {
	busctl get-property org.fwhelperd1 /org/fwhelperd1 org.fwhelperd1.Manager "$1" 2>/dev/null \
		| cut -d' ' -f2- | tr -d '"'
}
sleep_state() { fwh_prop SleepState; }
_fwh_state_is() { [ "$(sleep_state)" = "$1" ]; }
wait_state() { # SECS STATE
	wait_until "$1" _fwh_state_is "$2"
}

# fwh_sleep_json KEY: a value of the "sleep" object of `fwctl status --json`.
fwh_sleep_json() {
	fwctl status --json 2>/dev/null | sed -n 's/.*"sleep":{\([^}]*\)}.*/\1/p' \
		| tr ',' '\n' | sed -n "s/^\"$1\":\"\{0,1\}\([^\"]*\)\"\{0,1\}\$/\1/p"
}

# fwh_locks: PIDs of fw-helperd's "sleep" delay locks, one a line, as logind lists them.
fwh_locks() {
	COLUMNS=1000 systemd-inhibit --list --no-pager 2>/dev/null \
		| awk '$1 == "fw-helperd" && $NF == "delay" && $6 ~ /(^|:)sleep(:|$)/ { print $4 }'
}
fwh_lock_count() { fwh_locks | grep -c .; }
# One lock, held by the running daemon.
fwh_lock_held() { [ "$(fwh_locks)" = "$(fwh_pid)" ]; }
fwh_lock_gone() { [ "$(fwh_lock_count)" -eq 0 ]; }
show_locks() { COLUMNS=1000 systemd-inhibit --list --no-pager 2>&1 | sed 's/^/  | /'; }

fwh_rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
fwh_fd_count() { ls "/proc/$1/fd" | wc -l; }

# The daemon at rest: running, idle, holding its lock.
_fwh_at_rest() {
	systemctl is-active -q "$FWH_UNIT" && _fwh_state_is idle && fwh_lock_held
}
wait_at_rest() { # SECS
	wait_until "$1" _fwh_at_rest
}

fwh_restart() {
	systemctl restart "$FWH_UNIT" || fail "systemctl restart $FWH_UNIT"
	wait_until 20 systemctl is-active -q "$FWH_UNIT" || fail "$FWH_UNIT did not come back"
}

# sleep_setup [CONFIG-LINE...]: test_firmware loaded (and unloaded at exit when it was
# not before: the kernel's and the daemon's names of its device go with it), the daemon
# serving $FWH_FW_DIR with the [Sleep] settings given, restarted with them; pm_test
# available. Everything restored at exit.
sleep_setup() {
	need_fw_helperd
	[ -w /sys/power/pm_test ] || skip "no /sys/power/pm_test (CONFIG_PM_DEBUG)"
	grep -qw devices /sys/power/pm_test || skip "pm_test has no 'devices' level"
	systemctl is-active -q systemd-logind.service || fail "systemd-logind is not running"
	if ! lsmod | grep -q '^test_firmware '; then
		at_exit "modprobe -r test_firmware"
	fi
	setup_test_firmware
	_fwh_pm_test=$(sed 's/.*\[\([a-z]*\)\].*/\1/' /sys/power/pm_test)
	at_exit "echo $_fwh_pm_test >/sys/power/pm_test"
	mkdir -p "$FWH_DROPIN_DIR"
	{
		printf '[Firmware]\nSearchPath=%s\n\n[Sleep]\n' "$FWH_FW_DIR"
		for _fwh_l in "$@"; do printf '%s\n' "$_fwh_l"; done
	} >"$FWH_DROPIN_DIR/60-vmtest-sleep.conf"
	info "config: $(tr '\n' ' ' <"$FWH_DROPIN_DIR/60-vmtest-sleep.conf")"
	at_exit "rm -f $FWH_DROPIN_DIR/60-vmtest-sleep.conf; systemctl restart $FWH_UNIT"
	fwh_restart
	wait_at_rest 20 || { show_locks; fail "daemon not at rest after start: state '$(sleep_state)'"; }
}

# serve NAME FILE: a device asks for NAME and gets FILE's bytes, so the daemon records it.
serve() {
	assert_served "$1" "$2"
}

## Journal -----------------------------------------------------------------

# journal_export MATCH...: entries since journal_mark in journalctl's export format
# (binary-safe: not through journal_since_mark's grep). The marker entry itself does not
# match the matches the cases use.
journal_export() {
	journalctl -q -b --no-pager ${FWH_JOURNAL_CURSOR:+--cursor="$FWH_JOURNAL_CURSOR"} -o export "$@"
}

# entry_usec MATCH...: __MONOTONIC_TIMESTAMP of the first entry since the mark matching;
# empty when none.
entry_usec() {
	journal_export "$@" | sed -n 's/^__MONOTONIC_TIMESTAMP=//p' | head -n1
}
# entry_usec_grep PATTERN [AFTER] -- MATCH...: CLOCK_MONOTONIC time (us) of the first entry
# since the mark whose message matches the extended regex PATTERN, later than AFTER (us).
# From the short-monotonic text: the kernel's entries carry their printk time there.
entry_usec_grep() {
	_fwh_p=$1 _fwh_a=0
	shift
	if [ "${1:-}" != -- ]; then _fwh_a=${1:-0}; shift; fi
	[ "${1:-}" = -- ] && shift
	journal_since_mark "$@" | awk -v p="$_fwh_p" -v after="$_fwh_a" '
		match($0, /^\[ *[0-9]+\.[0-9]+\]/) {
			ts = substr($0, 2, RLENGTH - 2)
			gsub(/ /, "", ts)
			split(ts, a, ".")
			t = a[1] * 1000000 + a[2]
			rest = substr($0, RLENGTH + 2)
			i = index(rest, ": ")
			msg = i ? substr(rest, i + 2) : rest
			if (t > after + 0 && msg ~ p) { printf "%.0f\n", t; exit }
		}'
}
# entry_field FIELD MATCH...: FIELD of the first entry since the mark matching.
entry_field() {
	_fwh_f=$1
	shift
	journal_export "$@" | sed -n "s/^$_fwh_f=//p" | head -n1
}
show_journal() { # the journal since the mark, for the record
	journal_since_mark "$@" | sed 's/^/  | /'
}

## Suspend ------------------------------------------------------------------

# suspend_start: one pm_test=devices cycle (devices suspended and resumed, no real
# sleep, 5 s pause): `systemctl suspend` returns at once.
suspend_start() {
	echo devices >/sys/power/pm_test || fail "cannot set pm_test"
	systemctl suspend || fail "systemctl suspend failed"
}

# wait_resumed SECS: the cycle is over: systemd-sleep says so and logind is not
# preparing any more (PrepareForSleep(false) went out).
_fwh_resumed() {
	_fwh_journal_has MESSAGE_ID=$MSG_SLEEP_STOP \
		&& [ "$(busctl get-property org.freedesktop.login1 /org/freedesktop/login1 \
			org.freedesktop.login1.Manager PreparingForSleep 2>/dev/null)" = "b false" ]
}
wait_resumed() {
	wait_until "$1" _fwh_resumed
}

# hold_sleep: our own sleep delay lock, released by release_sleep. While the daemon
# is done with its preparation, logind still waits for us: a step "after prewarm,
# before the kernel suspends" becomes deterministic. Inside InhibitDelayMaxSec (5 s).
hold_sleep() {
	rm -f "$FWH_CASE_TMP/release-sleep"
	systemd-inhibit --what=sleep --mode=delay --who=fwh-vmtest --why="staging a test" \
		sh -c "while [ ! -e '$FWH_CASE_TMP/release-sleep' ]; do sleep 0.05; done" &
	_fwh_hold_pid=$!
	at_exit "touch '$FWH_CASE_TMP/release-sleep'"
	wait_until 10 _fwh_our_lock || fail "our own delay lock did not show up"
}
_fwh_our_lock() {
	COLUMNS=1000 systemd-inhibit --list --no-pager 2>/dev/null | grep -q '^ *fwh-vmtest '
}
# longer_sleep_delay SECS: logind waits up to SECS for delay locks (InhibitDelayMaxSec=,
# 5 s by default) until the case exits: room for slow steps while the suspend is held.
# logind restarts to read it; the daemon takes its lock from the new one.
longer_sleep_delay() {
	mkdir -p /run/systemd/logind.conf.d
	printf '[Login]\nInhibitDelayMaxSec=%s\n' "$1" >/run/systemd/logind.conf.d/60-vmtest-sleep.conf
	at_exit "rm -f /run/systemd/logind.conf.d/60-vmtest-sleep.conf; systemctl restart systemd-logind; wait_at_rest 20"
	systemctl restart systemd-logind || fail "cannot restart systemd-logind"
	wait_at_rest 20 || { show_locks; fail "daemon did not take its lock from the restarted logind"; }
}

release_sleep() {
	touch "$FWH_CASE_TMP/release-sleep"
	wait "$_fwh_hold_pid" 2>/dev/null
	return 0
}

# Read-only root, staged as VM-NOTES says: journald leaves /var first (journal_to_run,
# which may come earlier: it is the slow part), then the remount.
journal_to_run() {
	[ -n "${_fwh_journal_in_run:-}" ] && return 0
	journalctl --relinquish-var || fail "journalctl --relinquish-var"
	at_exit "journalctl --flush"
	_fwh_journal_in_run=1
}
# Files open on / other than for reading: what makes a remount read-only "busy".
root_writers() {
	for _fwh_fd in /proc/[0-9]*/fd/*; do
		_fwh_t=$(readlink "$_fwh_fd" 2>/dev/null) || continue
		case $_fwh_t in /proc/* | /sys/* | /dev/* | /run/* | socket:* | pipe:* | anon_inode:* | /) continue ;; esac
		_fwh_fl=$(sed -n 's/^flags:[[:space:]]*//p' "${_fwh_fd%/fd/*}/fdinfo/${_fwh_fd##*/}" 2>/dev/null)
		# O_WRONLY or O_RDWR: the octal flags' last digit is 1 or 2
		case $_fwh_fl in *1 | *2) echo "$(cat "${_fwh_fd%/fd/*}/comm" 2>/dev/null) ${_fwh_fd%/fd/*}: $_fwh_t" ;; esac
	done
}
root_ro() {
	journal_to_run
	# a writer of the system's own (a service flushing a file) may hold / a moment
	for _ in $(seq 20); do
		mount -o remount,ro / 2>"$FWH_CASE_TMP/remount.err" && break
		sleep 0.25
	done
	root_is_ro || { cat "$FWH_CASE_TMP/remount.err"; root_writers; fail "mount -o remount,ro / failed for 5 s"; }
	at_exit "mount -o remount,rw /"
}
root_rw() {
	mount -o remount,rw / || fail "mount -o remount,rw / failed"
}
# The last mount on / is the one in effect.
root_is_ro() { awk '$2 == "/" { o = $4 } END { exit !(o ~ /^ro(,|$)/) }' /proc/mounts; }

# The background trigger (trigger_bg) has not returned yet.
_fwh_trigger_pending() { kill -0 "$FWH_TRIGGER_PID" 2>/dev/null; }
