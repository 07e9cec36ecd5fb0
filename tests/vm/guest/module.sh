# SPDX-License-Identifier: MIT
# Helpers for the 40-module-* cases (fwh_cache); pulls in lib.sh itself.
. /usr/lib/fwh-vmtest/lib.sh

FWH_MODDIR=$FWH_VMTEST_DIR/modules
FWH_FC=/sys/kernel/fwh_cache
[ -f "$FWH_MODDIR/fwh_cache.ko" ] || skip "fwh_cache.ko is not in this payload"

# load_fwh_cache [PARAM=VALUE...]: a fresh fwh_cache, unloaded at exit. fw-helperd uses
# the module too ([Module] Mode=if-available): it is stopped and masked first (a uevent would
# start it again), so that the entries are the case's own, and started again at exit (after
# the unload: at_exit runs last-in first).
load_fwh_cache() {
	if systemctl is-active -q fw-helperd.service 2>/dev/null; then
		at_exit "systemctl start fw-helperd.service"
	fi
	if systemctl cat fw-helperd.service >/dev/null 2>&1; then
		systemctl mask --runtime --now -q fw-helperd.service || fail "cannot mask fw-helperd"
		at_exit "systemctl unmask --runtime -q fw-helperd.service"
	fi
	# the daemon cases leave the fallback forced: here the direct loader alone answers,
	# unless a case forces it again itself
	_fwh_force=$(cat "$FWH_FW_CONFIG/force_sysfs_fallback")
	echo 0 >"$FWH_FW_CONFIG/force_sysfs_fallback"
	at_exit "echo $_fwh_force >$FWH_FW_CONFIG/force_sysfs_fallback"
	rmmod fwh_cache 2>/dev/null
	insmod "$FWH_MODDIR/fwh_cache.ko" "$@" || fail "insmod fwh_cache $*"
	at_exit "rmmod fwh_cache 2>/dev/null || :"
}

# write_fmt FILE FORMAT: printf FORMAT (escapes allowed, even \000) into FILE
# in a single write(); on failure prints the error text and returns 1.
write_fmt() {
	# shellcheck disable=SC2059
	_fwh_out=$(printf -- "$2" | dd of="$1" bs=65536 2>&1) && return 0
	echo "$_fwh_out" | sed -n 's/.*error writing[^:]*: //p'
	return 1
}

# entry NAME: "<state> <size> <error>" of NAME in entries, empty if absent.
entry() {
	awk -v n="$1" '{ l = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", l); if (l == n) print $1, $2, $3 }' \
		"$FWH_FC/entries"
}

entry_is() { [ "$(entry "$1")" = "$2" ]; }

# wait_entry TIMEOUT_S NAME EXPECTED
wait_entry() {
	wait_until "$1" entry_is "$2" "$3" || fail "entry $2: '$(entry "$2")', expected '$3'"
}

# dmesg_time REGEX: seconds (dmesg's clock) of the last kernel line matching.
dmesg_time() {
	dmesg | grep -E "$1" | tail -n 1 | sed -n 's/^\[ *\([0-9]*\.[0-9]*\)\].*/\1/p'
}

# check_dmesg: no warning, oops or BUG since this case started.
check_dmesg() {
	dmesg | sed -n "/fwh-vmtest: starting $FWH_CASE\( (boot [0-9]*)\)\{0,1\}\$/,\$p" >"$FWH_CASE_TMP/dmesg"
	if grep -E 'WARNING:|BUG:|Oops|general protection|refcount_t|list_del corruption|kobject.*already' \
		"$FWH_CASE_TMP/dmesg"; then
		fail "kernel complained, see above"
	fi
}
