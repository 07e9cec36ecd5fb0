#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The control interface: caching a file of /lib/firmware through the direct
# loader, entries, retries, hostile names, uncache, bounds, release_delay_ms.

# Shared by the 40-module-* cases; kept inline because the bed runs every
# file in cases/ as a case.
. /usr/lib/fwh-vmtest/lib.sh

FWH_MODDIR=$FWH_VMTEST_DIR/modules
FWH_FC=/sys/kernel/fwh_cache
[ -f "$FWH_MODDIR/fwh_cache.ko" ] || skip "fwh_cache.ko is not in this payload"

# load_fwh_cache [PARAM=VALUE...]: a fresh fwh_cache, unloaded at exit.
load_fwh_cache() {
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
	dmesg | sed -n "/fwh-vmtest: starting $FWH_CASE\$/,\$p" >"$FWH_CASE_TMP/dmesg"
	if grep -E 'WARNING:|BUG:|Oops|general protection|refcount_t|list_del corruption|kobject.*already' \
		"$FWH_CASE_TMP/dmesg"; then
		fail "kernel complained, see above"
	fi
}

load_fwh_cache
at_exit "rm -rf /lib/firmware/fwh-test"
make_blob 12345 /lib/firmware/fwh-test/basic.bin
make_blob 5000 "/lib/firmware/fwh-test/with space.bin" 7

info "interface present"
for f in cache uncache entries release_delay_ms; do
	[ -e "$FWH_FC/$f" ] || fail "$FWH_FC/$f missing"
done
assert_eq "$(cat "$FWH_FC/release_delay_ms")" 10000 "default release_delay_ms"
assert_eq "$(cat "$FWH_FC/entries")" "" "entries at load"

info "cache a file of /lib/firmware: the writer returns at once, the entry becomes cached"
echo fwh-test/basic.bin >"$FWH_FC/cache" || fail "cache fwh-test/basic.bin"
wait_entry 10 fwh-test/basic.bin "cached 12345 0"
[ -d /sys/devices/fwh_cache/entry0 ] || fail "no entry device"
write_fmt "$FWH_FC/cache" 'fwh-test/with space.bin' || fail "name with a blank refused"
wait_entry 10 "fwh-test/with space.bin" "cached 5000 0"

info "caching again is a no-op"
echo fwh-test/basic.bin >"$FWH_FC/cache" || fail "second cache of the same name"
assert_eq "$(grep -c 'basic.bin$' "$FWH_FC/entries")" 1 "entries for basic.bin"

info "a missing file fails with -ENOENT and is tried again on the next write"
echo fwh-test/late.bin >"$FWH_FC/cache" || fail "cache fwh-test/late.bin"
wait_entry 10 fwh-test/late.bin "failed 0 -2"
make_blob 777 /lib/firmware/fwh-test/late.bin
echo fwh-test/late.bin >"$FWH_FC/cache" || fail "retry fwh-test/late.bin"
wait_entry 10 fwh-test/late.bin "cached 777 0"

info "hostile names are refused with EINVAL"
long=$(head -c 256 /dev/zero | tr '\0' a)
for fmt in '\n' '/lib/firmware/fwh-test/basic.bin' '../etc/passwd' 'fwh-test/../fwh-test/basic.bin' \
	'./fwh-test/basic.bin' 'fwh-test/.' 'fwh-test//basic.bin' 'fwh-test/' 'ctl\001.bin' \
	'del\177.bin' 'nul\000.bin' 'tab\t.bin' 'two\n\n' "$long"; do
	err=$(write_fmt "$FWH_FC/cache" "$fmt") && fail "cache accepted '$fmt'"
	assert_eq "$err" "Invalid argument" "error for '$fmt'"
done
assert_eq "$(wc -l <"$FWH_FC/entries")" 3 "entries after hostile writes"
info "a 255-byte name is fine (and missing)"
write_fmt "$FWH_FC/cache" "$(head -c 255 /dev/zero | tr '\0' b)" || fail "255-byte name refused"

info "uncache one, an unknown one, then all"
echo fwh-test/basic.bin >"$FWH_FC/uncache" || fail "uncache"
assert_eq "$(entry fwh-test/basic.bin)" "" "basic.bin after uncache"
err=$(write_fmt "$FWH_FC/uncache" 'fwh-test/basic.bin') && fail "uncache of an unknown name succeeded"
assert_eq "$err" "No such file or directory" "uncache of an unknown name"
echo '*' >"$FWH_FC/uncache" || fail "uncache *"
assert_eq "$(cat "$FWH_FC/entries")" "" "entries after uncache *"
[ -z "$(ls -d /sys/devices/fwh_cache/entry* 2>/dev/null)" ] || fail "entry devices left: $(ls /sys/devices/fwh_cache)"

info "bounds: max_entries and max_bytes"
echo 2 >/sys/module/fwh_cache/parameters/max_entries
echo fwh-test/basic.bin >"$FWH_FC/cache" && echo fwh-test/late.bin >"$FWH_FC/cache" || fail "cache two"
err=$(write_fmt "$FWH_FC/cache" 'fwh-test/with space.bin') && fail "third entry accepted"
assert_eq "$err" "No space left on device" "third entry"
echo '*' >"$FWH_FC/uncache"
echo 64 >/sys/module/fwh_cache/parameters/max_entries
echo 13000 >/sys/module/fwh_cache/parameters/max_bytes
echo fwh-test/basic.bin >"$FWH_FC/cache"
wait_entry 10 fwh-test/basic.bin "cached 12345 0"
echo fwh-test/late.bin >"$FWH_FC/cache"
wait_entry 10 fwh-test/late.bin "failed 0 -27"
echo '*' >"$FWH_FC/uncache"

info "release_delay_ms takes 0..3600000"
echo 2500 >"$FWH_FC/release_delay_ms" || fail "set 2500"
assert_eq "$(cat "$FWH_FC/release_delay_ms")" 2500 release_delay_ms
for bad in 3600001 -1 abc 1x; do
	write_fmt "$FWH_FC/release_delay_ms" "$bad" >/dev/null && fail "release_delay_ms accepted '$bad'"
done
assert_eq "$(cat "$FWH_FC/release_delay_ms")" 2500 "release_delay_ms after bad writes"

info "writes need root"
as_user sh -c "echo fwh-test/basic.bin >$FWH_FC/cache" 2>/dev/null && fail "unprivileged write accepted"

rmmod fwh_cache || fail "rmmod"
check_dmesg
