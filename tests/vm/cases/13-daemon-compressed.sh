#!/bin/sh
# .xz and .zst are decompressed by the daemon (the kernel would only look in its own
# roots); the kernel-release subdirectory is searched in the kernel's order.
. "$(dirname "$0")/../daemon.sh"
fwh_setup

blob /tmp/plain.bin 300000
xz -C crc32 -c /tmp/plain.bin > "$SRV/packed-xz.bin.xz"
zstd -q -c /tmp/plain.bin > "$SRV/packed-zst.bin.zst"
expect_served packed-xz.bin /tmp/plain.bin
expect_served packed-zst.bin /tmp/plain.bin
journal_has FIRMWARE=packed-zst.bin FW_COMPRESSION=zstd FW_SIZE=300000 || fail "no zstd entry"

# Corrupt compressed data is refused, never handed over truncated.
head -c 1000 "$SRV/packed-xz.bin.xz" > "$SRV/broken.bin.xz"
request broken.bin && fail "corrupt .xz served"
journal_has FIRMWARE=broken.bin FW_RESULT=failed || fail "no failed entry for corrupt .xz"

# /lib/firmware/$(uname -r) is one of the kernel's roots; the kernel itself would find a
# file there, so show the daemon a private tree in that place (its own mount namespace).
rel=$(uname -r)
mkdir -p /srv/libfw/"$rel" /run/systemd/system/fw-helperd.service.d
blob /srv/libfw/"$rel"/release-only.bin 7777
printf '[Service]\nBindReadOnlyPaths=/srv/libfw:/lib/firmware\n' \
	> /run/systemd/system/fw-helperd.service.d/50-vmtest.conf
systemctl daemon-reload
fwh_restart
expect_served release-only.bin /srv/libfw/"$rel"/release-only.bin
journal_has FIRMWARE=release-only.bin FW_PATH=/lib/firmware/"$rel"/release-only.bin \
	|| fail "not served from the release directory"
rm -f /run/systemd/system/fw-helperd.service.d/50-vmtest.conf
systemctl daemon-reload
fwh_restart
rm -rf /srv/libfw "$SRV"/packed-* "$SRV/broken.bin.xz" /tmp/plain.bin
