#!/bin/sh
# SPDX-License-Identifier: MIT
# More names to pin than fwh_cache has room for (max_entries): the names devices asked for
# are pinned, the configured ones (PrewarmFirmware=) are what is left out, and a notice
# names them.
. "$(dirname "$0")/../daemon.sh"
. /usr/lib/fwh-vmtest/lib.sh

need_fw_helperd
[ -e /sys/kernel/fwh_cache ] || modprobe fwh_cache || skip "no fwh_cache"
fwh_setup
at_exit "rm -rf $SRV/order /etc/fw-helperd/fw-helperd.conf.d/60-order.conf; systemctl restart fw-helperd"
old_max=$(cat /sys/module/fwh_cache/parameters/max_entries)
at_exit "echo '*' > /sys/kernel/fwh_cache/uncache 2>/dev/null; echo $old_max > /sys/module/fwh_cache/parameters/max_entries"

for n in dev-a dev-b conf-a conf-b conf-c; do blob "$SRV/order/$n.bin" 3000; done
printf '[Sleep]\nPrewarmFirmware=order/conf-a.bin order/conf-b.bin order/conf-c.bin\nCacheReleaseSec=60\n' \
	> /etc/fw-helperd/fw-helperd.conf.d/60-order.conf
# Names earlier cases had test_firmware ask for would rank with this case's own: start
# from an empty registry (kept across restarts in /run).
systemctl stop fw-helperd
rm -f /run/fw-helperd/registry
fwh_restart start
# the configured names are known first; then a device asks for two names
expect_served order/dev-a.bin "$SRV/order/dev-a.bin"
expect_served order/dev-b.bin "$SRV/order/dev-b.bin"
fwctl list | grep -q 'order/dev-b.bin' || { fwctl list; fail "served names not in the registry"; }

echo '*' > /sys/kernel/fwh_cache/uncache 2>/dev/null
echo 2 > /sys/module/fwh_cache/parameters/max_entries
journal_mark
fwctl prewarm >/dev/null || fail "fwctl prewarm"
wait_until 15 sh -c "grep -c '^cached ' /sys/kernel/fwh_cache/entries | grep -qx 2" \
	|| { cat /sys/kernel/fwh_cache/entries; fail "two entries not cached"; }
note "entries: $(cat /sys/kernel/fwh_cache/entries | tr '\n' ';')"
for n in dev-a dev-b; do
	grep -q "^cached 3000 0 order/$n.bin\$" /sys/kernel/fwh_cache/entries \
		|| fail "order/$n.bin (asked for by a device) not pinned"
done
grep -q 'order/conf-' /sys/kernel/fwh_cache/entries && fail "a configured name took a device's place"
full_notice() {
	journalctl -q -b -o verbose --no-pager --cursor="$FWH_JOURNAL_CURSOR" \
		MESSAGE_ID=db8b506e751c473b8ee4036c7c046eb7 FW_MODULE_STATUS=full >"$FWH_CASE_TMP/full"
	grep -q 'FW_MODULE_NOT_PINNED=.*order/conf-a.bin' "$FWH_CASE_TMP/full"
}
wait_until 5 full_notice || fail "no notice naming what was not pinned"
grep -q 'PRIORITY=5' "$FWH_CASE_TMP/full" || { cat "$FWH_CASE_TMP/full"; fail "not logged at notice level"; }
if grep -q 'FW_MODULE_NOT_PINNED=.*order/dev-' "$FWH_CASE_TMP/full"; then
	fail "a device's name was left out"
fi
