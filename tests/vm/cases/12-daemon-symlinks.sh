#!/bin/sh
# Symlinks are followed as the kernel follows them, wherever they lead, as long as the file
# they finally reach lies in one of the roots: Debian's /etc/alternatives links, updates/x ->
# ../x. A link out of every root is answered -1 and logged; nothing outside is read.
. "$(dirname "$0")/../daemon.sh"
fwh_setup

# wireless-regdb's shape: root -> /etc/alternatives/... -> back into a root, both absolute
mkdir -p /etc/fwh-alternatives "$SRV/regdb"
blob "$SRV/regdb/fwh-regulatory.db-debian" 4000
ln -sf "$SRV/regdb/fwh-regulatory.db-debian" /etc/fwh-alternatives/fwh-regulatory.db
ln -sf /etc/fwh-alternatives/fwh-regulatory.db "$SRV/fwh-regulatory.db"
expect_served fwh-regulatory.db "$SRV/regdb/fwh-regulatory.db-debian"
journal_has FIRMWARE=fwh-regulatory.db FW_RESULT=served FW_PATH="$SRV/fwh-regulatory.db" \
	|| fail "no served entry for the alternatives link"

# A link out of every root: refused, logged with the link as FW_PATH and EXDEV.
mkdir -p /srv/outside
echo secret > /srv/outside/secret.bin
ln -sf /srv/outside/secret.bin "$SRV/fwh-out.bin"
request fwh-out.bin && fail "a symlink out of the roots was followed"
cmp -s /dev/test_firmware /srv/outside/secret.bin && fail "driver holds the secret"
journal_has FIRMWARE=fwh-out.bin FW_RESULT=failed ERRNO=18 FW_PATH="$SRV/fwh-out.bin" \
	|| fail "no failed entry (EXDEV) for the link out of the roots"

# updates/x -> ../x between two of the kernel's own roots. The kernel would serve it itself,
# so only the daemon sees this tree in /lib/firmware's place (its own mount namespace).
mkdir -p /srv/libfw/updates /run/systemd/system/fw-helperd.service.d
blob /srv/libfw/fwh-upd.bin 6000
ln -sf ../fwh-upd.bin /srv/libfw/updates/fwh-upd.bin
printf '[Service]\nBindReadOnlyPaths=/srv/libfw:/lib/firmware\n' \
	> /run/systemd/system/fw-helperd.service.d/50-vmtest.conf
systemctl daemon-reload
fwh_restart
expect_served fwh-upd.bin /srv/libfw/fwh-upd.bin
journal_has FIRMWARE=fwh-upd.bin FW_RESULT=served FW_PATH=/lib/firmware/updates/fwh-upd.bin \
	|| fail "updates/x -> ../x not served through the updates root"

rm -f /run/systemd/system/fw-helperd.service.d/50-vmtest.conf
systemctl daemon-reload
fwh_restart
rm -rf /srv/libfw /srv/outside /etc/fwh-alternatives "$SRV"/fwh-* "$SRV/regdb"
