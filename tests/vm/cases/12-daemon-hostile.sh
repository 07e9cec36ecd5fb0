#!/bin/sh
# Hostile names are refused with -1 and a journal entry; nothing outside the roots is
# read, also not through a symlink, while internal symlinks work.
. "$(dirname "$0")/../daemon.sh"
fwh_setup

mkdir -p /srv/outside "$SRV/vendor"
echo secret > /srv/outside/secret.bin
# Current kernels refuse ".." components themselves (-EINVAL before any lookup); the
# others miss the kernel's direct loader and reach us as fallback requests.
for name in ../outside/secret.bin /srv/outside/secret.bin vendor/../../outside/secret.bin \
	    "$(printf 'ctl\001name.bin')" "vendor//x.bin"; do
	request "$name" && fail "hostile name '$name' was served"
done
cmp -s /dev/test_firmware /srv/outside/secret.bin && fail "driver holds the secret"
journal_has FW_RESULT=rejected FIRMWARE=/srv/outside/secret.bin || fail "no rejected entry for /abs"
journal_has FW_RESULT=rejected FIRMWARE=vendor//x.bin || fail "no rejected entry for an empty component"
journal_has FW_RESULT=rejected FW_REASON="Firmware name contains control characters." \
	|| fail "no rejected entry for control bytes"

# A symlink leaving the root is not followed...
ln -sf ../outside/secret.bin "$SRV/escape.bin"
request escape.bin && fail "symlink out of the root was followed"
# ...one staying inside is (linux-firmware ships many).
blob "$SRV/vendor/real.bin" 5000
ln -sf real.bin "$SRV/vendor/alias.bin"
mkdir -p "$SRV/sub"
ln -sf ../vendor/real.bin "$SRV/sub/link-up.bin"
expect_served vendor/alias.bin "$SRV/vendor/real.bin"
expect_served sub/link-up.bin "$SRV/vendor/real.bin"
rm -rf /srv/outside "$SRV/escape.bin" "$SRV/vendor" "$SRV/sub"
