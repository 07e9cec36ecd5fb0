#!/bin/sh
# Blobs around the page size and large ones reach the driver byte-exact, and each is one
# structured journal entry.
. "$(dirname "$0")/../daemon.sh"
fwh_setup

for size in 1 4095 4096 4097 1048576 67108864; do
	blob "$SRV/sizes/$size.bin" "$size"
	expect_served "sizes/$size.bin" "$SRV/sizes/$size.bin"
	note "$size bytes: ok"
done
journal_has FIRMWARE=sizes/4097.bin FW_RESULT=served FW_SIZE=4097 FW_PATH="$SRV/sizes/4097.bin" \
	|| fail "no served journal entry for sizes/4097.bin"
journal_has FIRMWARE=sizes/4097.bin DEVPATH=/devices/virtual/misc/test_firmware \
	|| fail "journal entry lacks the requesting device"
rm -rf "$SRV/sizes"
