#!/bin/sh
# SPDX-License-Identifier: MIT
# Baked into the disk bed's image (disk.sh): mounts the payload disk and
# copies it to /usr/lib/fwh-vmtest (test library, runner, cases, the .debs
# under test in debs/), on every boot (after a reboot the same payload is
# copied again: the cases and library stay those of the run).
set -eu
dev=/dev/disk/by-label/fwh-payload
mnt=/run/fwh-payload
i=0
until [ -b "$dev" ]; do
	i=$((i + 1))
	[ $i -le 300 ] || { echo "payload.sh: no $dev after 30 s" >&2; exit 1; }
	sleep 0.1
done
mkdir -p "$mnt"
mount -o ro "$dev" "$mnt"
rm -rf /usr/lib/fwh-vmtest
mkdir -p /usr/lib/fwh-vmtest
cp -R "$mnt/." /usr/lib/fwh-vmtest/
rm -rf /usr/lib/fwh-vmtest/lost+found
umount "$mnt"
rmdir "$mnt"
