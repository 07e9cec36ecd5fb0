#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Unload with entries held (cached and failed) releases them all: no entry
# device, no image left in vmalloc space, no complaint from the kernel.

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

at_exit "rm -rf /lib/firmware/fwh-test"
make_blob 3000000 /lib/firmware/fwh-test/big.bin 1
make_blob 123 /lib/firmware/fwh-test/small.bin 2

# Images read from disk live in vmalloc space, allocated under kernel_read_file.
fw_vmallocs() { grep -c 'kernel_read_file' /proc/vmallocinfo; }
before=$(fw_vmallocs)

load_fwh_cache
for n in big small missing; do echo fwh-test/$n.bin >"$FWH_FC/cache"; done
wait_entry 10 fwh-test/big.bin "cached 3000000 0"
wait_entry 10 fwh-test/small.bin "cached 123 0"
wait_entry 10 fwh-test/missing.bin "failed 0 -2"
held=$(fw_vmallocs)
info "vmalloc areas from kernel_read_file: $before before, $held while held"
[ "$held" -ge $((before + 2)) ] || fail "images not seen in /proc/vmallocinfo"

rmmod fwh_cache || fail "rmmod with entries held"
[ ! -e /sys/kernel/fwh_cache ] || fail "/sys/kernel/fwh_cache left"
[ ! -e /sys/devices/fwh_cache ] || fail "/sys/devices/fwh_cache left"
dmesg | grep -q 'fwh_cache: released 3 entries at unload' || fail "no release message"
assert_eq "$(fw_vmallocs)" "$before" "vmalloc areas after unload"

info "load and unload again, twice"
for _ in 1 2; do
	insmod "$FWH_MODDIR/fwh_cache.ko" || fail "insmod again"
	echo fwh-test/small.bin >"$FWH_FC/cache"
	wait_entry 10 fwh-test/small.bin "cached 123 0"
	rmmod fwh_cache || fail "rmmod again"
done
assert_eq "$(fw_vmallocs)" "$before" "vmalloc areas at the end"
if [ -e /sys/kernel/debug/kmemleak ]; then
	echo scan >/sys/kernel/debug/kmemleak
	grep -A5 fwh_ /sys/kernel/debug/kmemleak && fail "kmemleak reports"
else
	info "no kmemleak in this kernel (CONFIG_DEBUG_KMEMLEAK unset)"
fi
check_dmesg
