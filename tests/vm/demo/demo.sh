#!/bin/sh
# SPDX-License-Identifier: MIT
# The main job, told step by step on an installed Debian 12 (the disk bed): the package
# installed with dpkg, a real driver (e100 on qemu's 82559ER) getting Debian's image from
# a root only fw-helperd searches, fwctl status, the journal entries, and a suspend cycle
# whose prewarm answers a request from memory after the file is gone.
# fwh-vm-qemu: -netdev hubport,id=fwhe100,hubid=60 -device i82559er,netdev=fwhe100,addr=0x8
. /usr/lib/fwh-vmtest/sleep.sh
. /usr/lib/fwh-vmtest/pkg.sh

# Everything told goes to the case's output and, live, to the result port, where
# run-disk.sh --narrate picks out the "demo| " lines.
tell() {
	printf '%s\n' "$*"
	[ -w /dev/ttyS1 ] && printf 'demo| %s\n' "$*" >/dev/ttyS1
	return 0
}
say() { tell ""; tell "== $*"; }
show() { while IFS= read -r line; do tell "   $line"; done; }
run() { tell "   \$ $*"; "$@" 2>&1 | show; }

say "A Debian 12 machine booted from its disk: $(uname -r), systemd $(systemctl --version | sed -n '1s/systemd \([0-9]*\).*/\1/p')"
tell "   before: $FWH_RULE is udev's stub; force_sysfs_fallback=$(cat "$FWH_FORCE")"
show <"$FWH_RULE"

say "1. Install the fw-helperd package"
deb=$(ls "$FWH_DEBS"/fw-helperd_*.deb)
run dpkg -i "$deb"
run dpkg-divert --list '*50-firmware.rules'
run sysctl kernel.firmware_config.force_sysfs_fallback
run systemctl is-active fw-helperd.service
tell "   (fwh-cache-dkms, the companion module, is left out here: DKMS builds it in the VM,"
tell "   which takes minutes under emulation; tests/run-all.sh installs and tests it)"

say "2. One drop-in names /srv/firmware, which holds Debian's real e100 image (not /lib/firmware)"
mkdir -p "$FWH_FW_DIR/e100" /etc/fw-helperd/fw-helperd.conf.d
cp "$FWH_VMTEST_DIR/real-firmware/e100/d101s_ucode.bin" "$FWH_FW_DIR/e100/"
printf '[Firmware]\nSearchPath=/srv/firmware\n\n[Sleep]\nCacheReleaseSec=60s\n' \
	>/etc/fw-helperd/fw-helperd.conf.d/50-demo.conf
run cat /etc/fw-helperd/fw-helperd.conf.d/50-demo.conf
run systemctl reload fw-helperd.service
wait_at_rest 30 || true

say "3. A real driver asks: e100 on the emulated Intel 82559ER, its link brought up"
nic=$(for n in /sys/class/net/*; do [ "$(readlink -f "$n/device/driver")" = /sys/bus/pci/drivers/e100 ] && echo "${n##*/}"; done | head -n 1)
[ -n "$nic" ] || { modprobe e100; sleep 2; nic=$(ls /sys/bus/pci/drivers/e100/*/net 2>/dev/null | head -n 1); }
[ -n "$nic" ] || fail "no e100 interface"
journal_mark
run busybox ip link set "$nic" up
wait_until 20 sh -c "journalctl -q -b -u fw-helperd.service FIRMWARE=e100/d101s_ucode.bin | grep -q ." || true
dmesg | grep -E 'e100|d101s' | tail -n 4 | show
tell "   the journal entry fw-helperd wrote for it:"
journalctl -q -b -u fw-helperd.service FIRMWARE=e100/d101s_ucode.bin -o verbose \
	| grep -E '^ *(MESSAGE|FIRMWARE|DEVPATH|FW_RESULT|FW_PATH|FW_SIZE|FW_EVENT|FW_DURATION_USEC)=' | show
journalctl -q -b -u fw-helperd.service FIRMWARE=e100/d101s_ucode.bin FW_RESULT=served | grep -q . \
	|| fail "e100's request was not served"

say "4. fwctl status"
run fwctl status

say "5. A suspend cycle (pm_test=devices): the names devices asked for are read into memory first"
setup_test_firmware
make_blob 300000 "$FWH_FW_DIR/demo.bin"
cp "$FWH_FW_DIR/demo.bin" demo.ref
serve demo.bin demo.ref
run fwctl list
journal_mark
suspend_start
wait_resumed 120 || fail "the suspend cycle did not end"
journal_since_mark MESSAGE_ID=$MSG_PREWARMED -o cat | show
tell "   daemon: $(sleep_state), $(fwh_prop CacheEntries) images held in memory"
run rm "$FWH_FW_DIR/demo.bin"
tell "   (the kernel's own firmware cache answers for 10 s after resume; then the driver's"
tell "   request reaches fw-helperd)"
sleep 11
journal_mark
ms=$(trigger_ms demo.bin) || fail "demo.bin not answered after resume"
readback got
cmp -s got demo.ref || fail "demo.bin: wrong bytes"
tell "   demo.bin answered in $ms ms, byte for byte, with its file gone from disk:"
journal_since_mark MESSAGE_ID=$MSG_SERVED FIRMWARE=demo.bin -o verbose \
	| grep -E '^ *(MESSAGE|FW_SOURCE|FW_SIZE)=' | show
[ "$(entry_field FW_SOURCE MESSAGE_ID=$MSG_SERVED FIRMWARE=demo.bin)" = cache ] || fail "not served from memory"

say "Done: installed from its package, a real driver served at once, the journal says what"
tell "   happened, and after suspend a request was answered from memory."
rm -f /etc/fw-helperd/fw-helperd.conf.d/50-demo.conf
