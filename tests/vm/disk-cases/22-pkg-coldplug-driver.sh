#!/bin/sh
# SPDX-License-Identifier: MIT
# A real in-tree driver at boot: e100 on qemu's i82559er asks for
# e100/d101s_ucode.bin (Debian's firmware-misc-nonfree image, only in
# /srv/firmware, which 10-pkg-install's drop-in names) when its interface comes
# up. A unit brings it up at boot, as a network configuration would; after the
# reboot the driver got its image from fw-helperd (a served journal entry with
# the device's DEVPATH) and the kernel logged no failure.
#
# The NIC hangs off a qemu hub with no host side: no network is reachable.
# fwh-vm-qemu: -netdev hubport,id=fwhe100,hubid=60 -device i82559er,netdev=fwhe100,addr=0x8
. /usr/lib/fwh-vmtest/lib.sh
. /usr/lib/fwh-vmtest/pkg.sh
need_installed
REAL=$FWH_VMTEST_DIR/real-firmware/e100/d101s_ucode.bin
[ -s "$REAL" ] || skip "no real e100 image in the payload (tests/vm/firmware-package.sh failed?)"

nic=
for d in /sys/bus/pci/devices/*; do
	[ "$(cat "$d/vendor")" = 0x8086 ] && [ "$(cat "$d/device")" = 0x1209 ] \
		&& [ "$(cat "$d/revision")" = 0x09 ] && nic=$d
done
[ -n "$nic" ] || skip "no qemu i82559er: the boot lacks this case's fwh-vm-qemu device"
devpath=$(readlink -f "$nic")
devpath=${devpath#/sys}
for p in /lib/firmware /usr/lib/firmware; do
	[ -e "$p/e100/d101s_ucode.bin" ] && fail "$p/e100/d101s_ucode.bin exists: the kernel would load it itself"
done

unit=/etc/systemd/system/fwh-vmtest-linkup.service
helper=/usr/local/lib/fwh-vmtest-linkup.sh
if [ "$FWH_BOOT" = 1 ]; then
	mkdir -p "$FWH_FW_DIR/e100" /usr/local/lib
	cp "$REAL" "$FWH_FW_DIR/e100/"
	printf '#!/bin/sh\nfor n in %s/net/*; do busybox ip link set "${n##*/}" up; done\n' "/sys$devpath" >"$helper"
	chmod 0755 "$helper"
	cat >"$unit" <<-EOS
	[Unit]
	Description=fw-helperd VM test: bring up the e100 interfaces, as a network configuration would
	After=systemd-udev-settle.service systemd-udev-trigger.service
	Wants=systemd-udev-settle.service
	Before=network.target

	[Service]
	Type=oneshot
	RemainAfterExit=yes
	ExecStart=$helper

	[Install]
	WantedBy=multi-user.target
	EOS
	systemctl enable --quiet fwh-vmtest-linkup.service
	info "e100 at $devpath, image in $FWH_FW_DIR/e100, link-up unit enabled"
	reboot_then_continue
fi

systemctl disable --quiet fwh-vmtest-linkup.service
rm -f "$unit" "$helper"
info "link-up unit: $(systemctl show -P Result fwh-vmtest-linkup.service 2>/dev/null)"
dmesg | grep -i 'e100' | sed 's/^/  kernel: /'
journalctl -q -b -o short-monotonic -u fw-helperd.service FIRMWARE=e100/d101s_ucode.bin | sed 's/^/  journal: /'
journalctl -q -b -u fw-helperd.service FIRMWARE=e100/d101s_ucode.bin FW_RESULT=served DEVPATH="$devpath" \
	| grep -q . || fail "no served journal entry of fw-helperd for e100/d101s_ucode.bin from $devpath in this boot"
dmesg | grep -q 'e100.*[Ff]ailed to load firmware' && fail "e100 logged a firmware load failure"
rm -rf "$FWH_FW_DIR/e100"
info "e100 got its image from fw-helperd at boot"
