#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Several shells cache and uncache the same few names at once; afterwards the
# list is consistent, every image is right, and unload is clean.

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
for i in 1 2 3 4; do
	make_blob $((i * 70000)) /lib/firmware/fwh-test/c$i.bin $i
done

hammer() { # SEED
	n=0
	while [ $n -lt 60 ]; do
		i=$(( (n * 7 + $1) % 5 + 1 ))
		case $(( (n + $1) % 4 )) in
		0|1) echo fwh-test/c$i.bin >"$FWH_FC/cache" ;;
		2) echo fwh-test/c$i.bin >"$FWH_FC/uncache" ;;
		3) [ $(( n % 15 )) = 0 ] && echo '*' >"$FWH_FC/uncache"; cat "$FWH_FC/entries" >/dev/null ;;
		esac
		n=$((n + 1))
	done 2>/dev/null
}

info "4 writers x 60 operations (c5.bin does not exist)"
pids=
for s in 1 2 3 4; do
	hammer $s &
	pids="$pids $!"
done
wait $pids

info "then every name once more, all settle"
for i in 1 2 3 4; do echo fwh-test/c$i.bin >"$FWH_FC/cache"; done
for i in 1 2 3 4; do
	wait_entry 20 fwh-test/c$i.bin "cached $((i * 70000)) 0"
done
cat "$FWH_FC/entries"
assert_eq "$(grep -vc '^failed .* fwh-test/c5.bin$' "$FWH_FC/entries")" 4 "entries other than c5"
assert_eq "$(ls -d /sys/devices/fwh_cache/entry* | wc -l)" "$(wc -l <"$FWH_FC/entries")" "entry devices"

info "a racing uncache * while loads are queued"
echo '*' >"$FWH_FC/uncache"
for i in 1 2 3 4; do echo fwh-test/c$i.bin >"$FWH_FC/cache"; done
echo '*' >"$FWH_FC/uncache"
wait_until 10 sh -c "[ -z \"\$(ls -d /sys/devices/fwh_cache/entry* 2>/dev/null)\" ]" \
	|| fail "entry devices left: $(ls /sys/devices/fwh_cache)"

rmmod fwh_cache || fail "rmmod"
check_dmesg
