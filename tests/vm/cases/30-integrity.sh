#!/bin/sh
# [Integrity] on the real kernel: under Policy=enforce a tampered blob and one with no
# manifest entry are refused with -1 (the driver's request fails) and one
# FW_MESSAGE_VERIFY_FAILED entry names the file and both sums; good and compressed blobs
# are served; a rewritten SHA256SUMS is picked up without a reload. Under warn the tampered
# blob is served and logged.
. "$(dirname "$0")/../daemon.sh"
fwh_setup

VERIFY_FAILED=f76db412c7db4e538baef2300f695c0f
SERVED=d827878f321d40adab22e4709b89784a
conf=/etc/fw-helperd/fw-helperd.conf.d/60-vmtest-integrity.conf
cleanup() {
	rm -f "$conf" "$SRV/SHA256SUMS" "$SRV"/integ-* /tmp/integ-*
	systemctl restart fw-helperd
}
trap cleanup EXIT

sum() { sha256sum < "$1" | cut -d' ' -f1; }

blob "$SRV/integ-good.bin" 200000
blob "$SRV/integ-bad.bin" 150000
blob "$SRV/integ-unlisted.bin" 1000
blob /tmp/integ-plain.bin 100000
xz -C crc32 -c /tmp/integ-plain.bin > "$SRV/integ-packed.bin.xz"
(cd "$SRV" && sha256sum integ-good.bin integ-bad.bin integ-packed.bin.xz > SHA256SUMS)
expected=$(sum "$SRV/integ-bad.bin")
cp "$SRV/integ-bad.bin" /tmp/integ-orig.bin

# tamper with one byte in the middle, keeping the size
for c in X Y; do
	printf '%s' "$c" | dd of="$SRV/integ-bad.bin" bs=1 seek=70000 conv=notrunc 2>/dev/null
	cmp -s "$SRV/integ-bad.bin" /tmp/integ-orig.bin || break
done
actual=$(sum "$SRV/integ-bad.bin")
[ "$expected" != "$actual" ] || fail "tampering did not change the sum"
note "expected $expected, tampered $actual"

printf '[Integrity]\nRootPolicy=%s:enforce\n' "$SRV" > "$conf"
systemctl reload fw-helperd
fwh_wait_active

expect_served integ-good.bin "$SRV/integ-good.bin"
journal_has MESSAGE_ID=$SERVED FIRMWARE=integ-good.bin FW_VERIFY=match || fail "good blob: no match recorded"
expect_served integ-packed.bin /tmp/integ-plain.bin
journal_has MESSAGE_ID=$SERVED FIRMWARE=integ-packed.bin FW_VERIFY=match || fail "compressed blob: no match"

request integ-bad.bin 2>/dev/null && fail "enforce: tampered blob served"
journal_has MESSAGE_ID=$VERIFY_FAILED FIRMWARE=integ-bad.bin FW_PATH="$SRV/integ-bad.bin" \
	FW_EXPECTED_SHA256="$expected" FW_ACTUAL_SHA256="$actual" FW_VERIFY_POLICY=enforce \
	FW_VERIFY_STATUS=mismatch || fail "enforce: no verify-failed entry with both sums"
[ -z "$(journalctl -q -o cat -u fw-helperd MESSAGE_ID=$SERVED FIRMWARE=integ-bad.bin)" ] \
	|| fail "enforce: a served entry for the tampered blob"
journalctl -q -o verbose -u fw-helperd MESSAGE_ID=$VERIFY_FAILED FIRMWARE=integ-bad.bin \
	| grep -E 'MESSAGE=|FW_' | sed 's/^/# /'

request integ-unlisted.bin 2>/dev/null && fail "enforce: blob with no manifest entry served"
journal_has MESSAGE_ID=$VERIFY_FAILED FIRMWARE=integ-unlisted.bin FW_VERIFY_STATUS=no-entry \
	FW_ACTUAL_SHA256="$(sum "$SRV/integ-unlisted.bin")" || fail "enforce: no entry for the unlisted blob"

# the manifest is read again when it changes: no reload needed
sleep 0.01
(cd "$SRV" && sha256sum integ-good.bin integ-bad.bin integ-unlisted.bin > SHA256SUMS)
expect_served integ-bad.bin "$SRV/integ-bad.bin"
expect_served integ-unlisted.bin "$SRV/integ-unlisted.bin"

# warn: the tampered blob is served, and the mismatch logged
printf '%s  integ-bad.bin\n' "$expected" > "$SRV/SHA256SUMS"
printf '[Integrity]\nPolicy=warn\n' > "$conf"
systemctl reload fw-helperd
fwh_wait_active
expect_served integ-bad.bin "$SRV/integ-bad.bin"
journal_has MESSAGE_ID=$VERIFY_FAILED FIRMWARE=integ-bad.bin FW_VERIFY_POLICY=warn \
	FW_EXPECTED_SHA256="$expected" FW_ACTUAL_SHA256="$actual" || fail "warn: mismatch not logged"
journal_has MESSAGE_ID=$SERVED FIRMWARE=integ-bad.bin FW_VERIFY=mismatch || fail "warn: not served"
note "enforce refused the tampered blob, warn served it"
