# SPDX-License-Identifier: MIT
# shellcheck shell=sh
#
# Helpers for the disk bed's package cases (tests/vm/disk-cases/): the .debs
# under test installed with dpkg on an installed Debian, and requests as the
# system answers them with the settings the packages leave (nothing set by
# hand). Sourced after lib.sh. Those cases run in order and build on each
# other: 1x installs, 2x reboot, 3x break things and restore them, 4x remove
# and purge, 5x upgrade.

need_disk_bed

FWH_DEBS=$FWH_VMTEST_DIR/debs
# Kept across the cases (and reboots) of a run.
FWH_PKG_STATE=/var/lib/fwh-vmtest/pkg
FWH_RULE=/lib/udev/rules.d/50-firmware.rules
FWH_FORCE=$FWH_FW_CONFIG/force_sysfs_fallback
FWH_DROPIN_DIR=/etc/fw-helperd/fw-helperd.conf.d
mkdir -p "$FWH_PKG_STATE"
# A prompt answer, as opposed to a stall: a request nobody answers waits for
# the kernel's timeout (60 s), and fw-helperd-guard gives a starting daemon
# 15 s before it aborts. Answers take 0.1-0.3 s in a quiet guest and were seen
# at 1.2 s on a host loaded with other VMs; 5 s tells the two apart with room.
FWH_PROMPT_MS=5000

need_debs() {
	ls "$FWH_DEBS"/fw-helperd_*.deb >/dev/null 2>&1 || skip "no fw-helperd .deb in the payload"
}

# pkg_status NAME: dpkg's status word ("installed", "config-files", or
# "not-installed").
pkg_status() {
	_s=$(dpkg-query -W -f '${db:Status-Status}' "$1" 2>/dev/null)
	echo "${_s:-not-installed}"
}

need_installed() { # the state an earlier case left
	[ "$(pkg_status fw-helperd)" = installed ] || fail "fw-helperd is not installed (run with 10-pkg-install)"
}

# dpkg_install DIR: dpkg -i every .deb in DIR in one call (dpkg orders
# them); the image holds every dependency, nothing is fetched.
dpkg_install() {
	info "dpkg -i $(cd "$1" && echo *.deb)"
	_dpkg -i "$1"/*.deb
}

# dpkg_op OPTION PACKAGE...: dpkg -r / -P.
dpkg_op() {
	info "dpkg $*"
	_dpkg "$@"
}

# _dpkg ARGS...: dpkg, its output shown as it goes (a case killed by its
# timeout still shows how far dpkg got), with seconds since its start.
_dpkg() {
	_t0=$(now_ms)
	{ DEBIAN_FRONTEND=noninteractive dpkg "$@" 2>&1; echo "rc $?" >"$FWH_CASE_TMP/dpkg.rc"; } \
		| while IFS= read -r _l; do echo "  | $(( ($(now_ms) - _t0) / 1000 ))s $_l"; done
	[ "$(cat "$FWH_CASE_TMP/dpkg.rc")" = "rc 0" ] || fail "dpkg $* failed"
	info "dpkg $1 took $(( ($(now_ms) - _t0) / 1000 )) s"
}

wait_active() { # UNIT [SECS]
	wait_until "${2:-20}" systemctl is-active -q "$1" \
		|| { systemctl status --no-pager "$1" 2>&1 | tail -n 20; fail "$1 is not active"; }
}

# set_dropin NAME TEXT: a drop-in of fw-helperd's configuration.
set_dropin() {
	mkdir -p "$FWH_DROPIN_DIR"
	printf '%b' "$2" >"$FWH_DROPIN_DIR/$1"
}

# answer NAME: one request_firmware(NAME) as the system answers it now;
# prints "served MS" or "failed MS".
answer() {
	if trigger "$1"; then _r=served; else _r=failed; fi
	echo "$_r $(kernel_answer_ms "$1")"
}

# assert_answered NAME EXPECT [WHAT]: the request for NAME ends as EXPECT
# (served, failed, or any) within FWH_PROMPT_MS; a served one must be
# byte-exact against $FWH_FW_DIR/NAME.
assert_answered() {
	set -- "$1" "$2" "${3:-request for $1}" "$(answer "$1")"
	info "$3: $4 ms"
	case "$2" in
	any) ;;
	*) [ "${4% *}" = "$2" ] || fail "$3: ${4% *}, expected $2" ;;
	esac
	[ "${4#* }" -lt "$FWH_PROMPT_MS" ] || fail "$3: answered after ${4#* } ms, not within $FWH_PROMPT_MS ms"
	if [ "${4% *}" = served ]; then
		readback "$FWH_CASE_TMP/readback"
		assert_files_eq "$FWH_CASE_TMP/readback" "$FWH_FW_DIR/$1" "firmware $1 as received"
	fi
}

# force_is VALUE: what the packages left in force_sysfs_fallback.
force_is() {
	assert_eq "$(cat "$FWH_FORCE")" "$1" "force_sysfs_fallback"
}

# file_list: every path of the root filesystem but those that change by
# themselves or that dpkg keeps by design: its database (/var/lib/dpkg),
# caches, logs, runtime and scratch dirs, the test bed's own files, and
# systemd's state (random seed, timers' stamps, catalog database).
file_list() {
	find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp \
		-o -path /var/tmp -o -path /var/log -o -path /var/cache -o -path /var/lib/dpkg \
		-o -path /var/lib/systemd -o -path /var/lib/fwh-vmtest -o -path /usr/lib/fwh-vmtest \
		-o -path /lost+found \) -prune -o -print | LC_ALL=C sort
}
