#!/bin/sh
# SPDX-License-Identifier: MIT
#
# entries past a page: many entries with long names make a list of several
# pages, which must read whole and consistent however it is read (the kernel
# hands a sysfs file out a page per read()); changes show at the next read;
# the file is root's alone.

. /usr/lib/fwh-vmtest/module.sh

load_fwh_cache
n=48
pad=$(head -c 200 /dev/zero | tr '\0' x)

info "$n entries with 220-byte names"
i=0
while [ $i -lt $n ]; do
	echo "fwh-test/$pad-$i.bin" >"$FWH_FC/cache" || fail "cache #$i"
	i=$((i + 1))
done
all_failed() { [ "$(grep -c '^failed 0 -2 ' "$FWH_FC/entries")" = $n ]; }
wait_until 20 all_failed || fail "not all $n entries failed: $(grep -vc '^failed' "$FWH_FC/entries") other"

cat "$FWH_FC/entries" >"$FWH_CASE_TMP/cat"
bytes=$(wc -c <"$FWH_CASE_TMP/cat")
info "entries is $bytes bytes"
assert_lt 8192 "$bytes" "size of entries"
assert_eq "$(wc -l <"$FWH_CASE_TMP/cat")" $n "lines read by cat"
i=0
while [ $i -lt $n ]; do
	grep -qx "failed 0 -2 fwh-test/$pad-$i.bin" "$FWH_CASE_TMP/cat" || fail "entry #$i missing or cut"
	i=$((i + 1))
done

info "the same in small reads, a page per read and in one large read"
for bs in 100 4096 65536; do
	dd if="$FWH_FC/entries" bs=$bs 2>/dev/null >"$FWH_CASE_TMP/dd"
	assert_files_eq "$FWH_CASE_TMP/cat" "$FWH_CASE_TMP/dd"
done

info "a change shows at the next read from the start"
echo fwh-test/one-more.bin >"$FWH_FC/cache" || fail "cache one more"
wait_entry 10 fwh-test/one-more.bin "failed 0 -2"
assert_eq "$(wc -l <"$FWH_FC/entries")" $((n + 1)) "lines after one more"
echo fwh-test/one-more.bin >"$FWH_FC/uncache"
assert_eq "$(wc -l <"$FWH_FC/entries")" $n "lines after uncaching it"

info "root only: fwctl asks fw-helperd, nobody reads the file but root"
assert_eq "$(stat -c %a "$FWH_FC/entries")" 400 "mode of entries"
assert_fails as_user cat "$FWH_FC/entries"

echo '*' >"$FWH_FC/uncache"
assert_eq "$(wc -c <"$FWH_FC/entries")" 0 "entries after uncache *"
check_dmesg
