#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The control interface: caching a file of /lib/firmware through the direct
# loader, entries, retries, hostile names, uncache, bounds, release_delay_ms.

. /usr/lib/fwh-vmtest/module.sh

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
b255=$(head -c 255 /dev/zero | tr '\0' b)
write_fmt "$FWH_FC/cache" "$b255" || fail "255-byte name refused"
failed_entry() { entry "$b255" | grep -q '^failed '; }
wait_until 10 failed_entry || fail "255-byte name: '$(entry "$b255")', expected failed"

info "uncache one, an unknown one, then all"
echo fwh-test/basic.bin >"$FWH_FC/uncache" || fail "uncache"
assert_eq "$(entry fwh-test/basic.bin)" "" "basic.bin after uncache"
err=$(write_fmt "$FWH_FC/uncache" 'fwh-test/basic.bin') && fail "uncache of an unknown name succeeded"
assert_eq "$err" "No such file or directory" "uncache of an unknown name"
echo '*' >"$FWH_FC/uncache" || fail "uncache *"
assert_eq "$(cat "$FWH_FC/entries")" "" "entries after uncache *"
no_entry_devices() { [ -z "$(ls -d /sys/devices/fwh_cache/entry* 2>/dev/null)" ]; }
wait_until 5 no_entry_devices || fail "entry devices left: $(ls /sys/devices/fwh_cache)"

info "bounds: max_entries and max_bytes"
echo 2 >/sys/module/fwh_cache/parameters/max_entries
echo fwh-test/basic.bin >"$FWH_FC/cache" && echo fwh-test/late.bin >"$FWH_FC/cache" || fail "cache two"
err=$(write_fmt "$FWH_FC/cache" 'fwh-test/with space.bin') && fail "third entry accepted"
assert_eq "$err" "No space left on device" "third entry"
echo '*' >"$FWH_FC/uncache"
info "a failed entry tried again without room keeps its record"
echo fwh-test/gone.bin >"$FWH_FC/cache" && echo fwh-test/basic.bin >"$FWH_FC/cache" || fail "cache two"
wait_entry 10 fwh-test/gone.bin "failed 0 -2"
echo 1 >/sys/module/fwh_cache/parameters/max_entries
err=$(write_fmt "$FWH_FC/cache" 'fwh-test/gone.bin') && fail "retry over max_entries accepted"
assert_eq "$err" "No space left on device" "retry over max_entries"
assert_eq "$(entry fwh-test/gone.bin)" "failed 0 -2" "failed entry after a refused retry"
assert_eq "$(wc -l <"$FWH_FC/entries")" 2 "entries after a refused retry"
echo 2 >/sys/module/fwh_cache/parameters/max_entries
echo fwh-test/gone.bin >"$FWH_FC/cache" || fail "retry with room"
wait_entry 10 fwh-test/gone.bin "failed 0 -2"
assert_eq "$(sed -n 1p "$FWH_FC/entries")" "failed 0 -2 fwh-test/gone.bin" "retried entry keeps its place"
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
