#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Unload with entries held (cached and failed) releases them all: no entry
# device, no image left in vmalloc space, no complaint from the kernel.

. /usr/lib/fwh-vmtest/module.sh

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
