#!/bin/sh
# SPDX-License-Identifier: MIT
#
# userspace_fallback left at 1 by a helper that is gone (killed, OOM, start
# limit): a load asks nobody. It must end within helper_timeout_ms, failed
# with -ETIMEDOUT, with no task left in D state, and the flag must drop back
# to 0 so that later loads do not ask again. The module's loads are custom
# fallback requests without a uevent, so neither udev's stub nor fw-helperd's
# guard sees them; the rule is masked anyway so that nothing but the module
# can end the request.

. /usr/lib/fwh-vmtest/module.sh

bound_ms=5000
# A wait on the helper would last bound_ms; "at once" is anything well below it
# (a fixed 1 s flakes on a host loaded with other VMs).
at_once_ms=$((bound_ms / 2))
load_fwh_cache helper_timeout_ms=$bound_ms # also stops and masks fw-helperd
mask_udev_firmware_rule
assert_eq "$(cat /sys/module/fwh_cache/parameters/helper_timeout_ms)" $bound_ms "helper_timeout_ms"

# d_state_fw: the D-state tasks that wait in the firmware loader or in fwh_cache
# (one awk over every stat file: a process per task is too slow under TCG).
d_state_fw() {
	for pid in $(awk '{ s = $0; sub(/.*\) /, "", s); if (substr(s, 1, 1) == "D") {
			p = FILENAME; gsub(/[^0-9]/, "", p); print p } }' /proc/[0-9]*/stat 2>/dev/null); do
		where=$(cat "/proc/$pid/stack" "/proc/$pid/wchan" 2>/dev/null)
		case $where in
		*fw_*|*firmware*|*fwh_*) echo "$pid $(cat "/proc/$pid/comm" 2>/dev/null): $(echo "$where" | head -n 6 | tr '\n' ' ')" ;;
		esac
	done
}

info "a helper said it answers, then went away"
echo 1 >"$FWH_FC/userspace_fallback"
t0=$(now_ms)
echo fwh-test/nobody-answers.bin >"$FWH_FC/cache" || fail "cache write"
ms=$(( $(now_ms) - t0 ))
assert_lt "$ms" "$at_once_ms" "the cache write returns at once (${ms} ms)"
req=/sys/class/firmware/fwh-test!nobody-answers.bin
wait_until 5 test -e "$req/loading" || fail "no custom fallback request appeared: $(pending_requests)"
assert_eq "$(entry fwh-test/nobody-answers.bin)" "loading 0 0" "entry while nobody answers"
waiting=$(d_state_fw)
info "meanwhile in D state: $waiting"
[ -n "$waiting" ] || fail "the loader's wait is not seen in D state: this check would prove nothing"

info "the load ends within the bound: failed with -ETIMEDOUT"
wait_entry $(( bound_ms / 1000 + 5 )) fwh-test/nobody-answers.bin "failed 0 -110"
ms=$(( $(now_ms) - t0 ))
info "ended after ${ms} ms"
wait_until 5 sh -c "! test -e '$req'" || fail "the request stayed: $(pending_requests)"
stuck=$(d_state_fw)
[ -z "$stuck" ] || fail "tasks in D state after the bound: $stuck"
assert_eq "$(cat "$FWH_FC/userspace_fallback")" 0 "userspace_fallback after nobody answered"
dmesg | grep -q 'no helper answered for fwh-test/nobody-answers.bin' || fail "no kernel message for it"

info "later loads no longer ask: -ENOENT at once"
t0=$(now_ms)
echo fwh-test/after.bin >"$FWH_FC/cache" || fail "cache write"
wait_entry 5 fwh-test/after.bin "failed 0 -2"
ms=$(( $(now_ms) - t0 ))
assert_lt "$ms" "$at_once_ms" "direct loader only (${ms} ms)"
[ -z "$(pending_requests)" ] || fail "a request was made: $(pending_requests)"

info "uncached while asking: the request still ends within the bound, unload works after"
echo 1 >"$FWH_FC/userspace_fallback"
echo fwh-test/dropped.bin >"$FWH_FC/cache"
wait_until 5 test -e "/sys/class/firmware/fwh-test!dropped.bin/loading" || fail "no request for dropped.bin"
echo fwh-test/dropped.bin >"$FWH_FC/uncache" || fail "uncache while asking"
wait_until $(( bound_ms / 1000 + 5 )) sh -c "! test -e '/sys/class/firmware/fwh-test!dropped.bin'" \
	|| fail "request for dropped.bin stayed"
[ -z "$(d_state_fw)" ] || fail "tasks in D state: $(d_state_fw)"
wait_until 5 rmmod fwh_cache || fail "rmmod fwh_cache after the bound"
check_dmesg
