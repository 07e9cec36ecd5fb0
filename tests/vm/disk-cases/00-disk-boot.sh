#!/bin/sh
# SPDX-License-Identifier: MIT
# The disk bed itself: booted like an installed Debian (root ext4 on
# virtio-blk via Debian's initramfs, the running kernel and its headers
# installed by dpkg), the services fw-helperd depends on running, nothing
# failed, the journal persistent.
. /usr/lib/fwh-vmtest/lib.sh
need_disk_bed

assert_eq "$(findmnt -n -o SOURCE,FSTYPE /)" "/dev/vda ext4" "root"
findmnt -n -o OPTIONS / | grep -q '^rw' || fail "root is not read-write: $(findmnt -n -o OPTIONS /)"
k=$(uname -r)
info "kernel $k: $(dpkg -S "/boot/vmlinuz-$k" | cut -d: -f1), headers: $(dpkg -S "/usr/src/linux-headers-$k" | cut -d: -f1)"
assert_eq "$(dpkg-query -W -f '${db:Status-Status}' "linux-headers-$k")" installed "linux-headers-$k"
assert_true test -s "/boot/initrd.img-$k"
for unit in systemd-journald.service systemd-udevd.service dbus.service \
	systemd-logind.service systemd-sysctl.service; do
	assert_eq "$(systemctl is-active "$unit")" active "$unit"
done
state=$(systemctl is-system-running)
[ "$state" = running ] || { systemctl --failed --no-pager; fail "system state '$state'"; }
assert_true test -d "/var/log/journal/$(cat /etc/machine-id)"
assert_eq "$(as_user id -u)" 1000 "fwuser uid"
modinfo test_firmware >/dev/null || fail "test_firmware module not installed"
info "force_sysfs_fallback=$(cat /proc/sys/kernel/firmware_config/force_sysfs_fallback), $(ls /usr/lib/fwh-vmtest/debs/*.deb 2>/dev/null | wc -l) .deb(s) in the payload"
