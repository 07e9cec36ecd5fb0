#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Several shells cache and uncache the same few names at once; afterwards the
# list is consistent, every image is right, and unload is clean.

. /usr/lib/fwh-vmtest/module.sh

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
