#!/bin/sh
# SPDX-License-Identifier: MIT
# A real in-tree driver, not test_firmware: e100 on qemu's emulated Intel 8255x NICs calls
# request_firmware() when its interface is brought up (not at probe). With the fallback
# forced, fw-helperd serves Debian's real image (firmware-misc-nonfree) from /srv/firmware
# with the PCI device's DEVPATH, and the driver accepts it; with the image absent the
# request is answered -1 at once and the driver does what it does without microcode:
# i82559ER (revision 9, e100/d101s_ucode.bin) comes up without CPUSaver, i82551
# (revision 0x0f, e100/d102e_ucode.bin, required) refuses to come up.
#
# The NICs hang off a qemu hub with no host side: no network is reachable.
# fwh-vm-qemu: -netdev hubport,id=fwhe100,hubid=60 -device i82559er,netdev=fwhe100,addr=0x8 -netdev hubport,id=fwhe100r,hubid=60 -device i82551,netdev=fwhe100r,addr=0x9
#
# e100 never releases a loaded image (nic->fw outlives the device), so the kernel keeps
# its buffer and answers a later request for the same name in this boot from memory, with
# no uevent: the absent-image steps run first, and the case runs once per boot.
. /usr/lib/fwh-vmtest/sleep.sh

need_fw_helperd
REAL=$FWH_VMTEST_DIR/real-firmware/e100
[ -s "$REAL/d101s_ucode.bin" ] && [ -s "$REAL/d102e_ucode.bin" ] \
	|| skip "no real e100 images in the payload (tests/vm/firmware-package.sh failed?)"
modinfo e100 >/dev/null 2>&1 || skip "e100 is not among the guest's modules (tests/vm/kernel.sh)"

# The emulated NICs: Intel 8086:1209 at revision 9 (qemu's i82559er) and 0x0f (i82551).
find_nic() { # REVISION
	for _d in /sys/bus/pci/devices/*; do
		[ "$(cat "$_d/vendor")" = 0x8086 ] && [ "$(cat "$_d/device")" = 0x1209 ] \
			&& [ "$(cat "$_d/revision")" = "$1" ] && { echo "$_d"; return 0; }
	done
	return 1
}
ER=$(find_nic 0x09) || skip "no qemu i82559er (8086:1209 rev 0x09): the boot lacks this case's fwh-vm-qemu devices"
F=$(find_nic 0x0f) || skip "no qemu i82551 (8086:1209 rev 0x0f): the boot lacks this case's fwh-vm-qemu devices"
ER_DEVPATH=$(readlink -f "$ER") ER_DEVPATH=${ER_DEVPATH#/sys}
F_DEVPATH=$(readlink -f "$F") F_DEVPATH=${F_DEVPATH#/sys}
info "i82559er: $ER_DEVPATH revision $(cat "$ER/revision") -> e100/d101s_ucode.bin (optional)"
info "i82551:   $F_DEVPATH revision $(cat "$F/revision") -> e100/d102e_ucode.bin (required)"

# The kernel's own loader must not find the images, or nothing reaches user space.
for _p in /lib/firmware /lib/firmware/updates /usr/lib/firmware /usr/lib/firmware/updates \
	"$(cat /sys/module/firmware_class/parameters/path 2>/dev/null)"; do
	[ -n "$_p" ] || continue
	ls "$_p"/e100/* >/dev/null 2>&1 && fail "$_p/e100 exists: the direct loader would answer"
done

## Setup: forced fallback, fw-helperd serving $FWH_FW_DIR, e100 bound -------------------
old_force=$(cat "$FWH_FW_CONFIG/force_sysfs_fallback")
echo 1 >"$FWH_FW_CONFIG/force_sysfs_fallback"
at_exit "echo $old_force >$FWH_FW_CONFIG/force_sysfs_fallback"
old_timeout=$(cat /sys/class/firmware/timeout)
at_exit "echo $old_timeout >/sys/class/firmware/timeout"
set_fallback_timeout 30
mkdir -p "$FWH_DROPIN_DIR" "$FWH_FW_DIR"
rm -rf "${FWH_FW_DIR:?}/e100"
at_exit "rm -rf $FWH_FW_DIR/e100"
printf '[Firmware]\nSearchPath=%s\n' "$FWH_FW_DIR" >"$FWH_DROPIN_DIR/60-vmtest-real-driver.conf"
at_exit "rm -f $FWH_DROPIN_DIR/60-vmtest-real-driver.conf; systemctl restart $FWH_UNIT"
fwh_restart

# kmsg_mark / kmsg_since: the kernel log after a marker line of our own.
kmsg_mark() {
	_kmark="fwh-vmtest 60-real-driver $1 $(now_ms)"
	echo "$_kmark" >/dev/kmsg
}
kmsg_since() {
	dmesg | sed -n "\\|$_kmark|,\$p" | sed 1d
}

journal_mark
kmsg_mark probe
lsmod | grep -q '^e100 ' && fail "e100 already loaded (tests/vm/run.sh blacklists its autoload)"
modprobe e100 || fail "modprobe e100"
# fw-helperd keeps a device's needs as long as the device exists, across restarts too: at
# the end e100 goes, the NICs go away (their "remove" uevents make the daemon forget them)
# and come back unbound (e100's autoload is blacklisted), so no e100 name outlives the case.
# e100_forgotten: fw-helperd answered `fwctl list`, and with no e100 name. A failed call
# is not an answer (its empty output would pass for one).
e100_forgotten() {
	fwctl list >"$FWH_CASE_TMP/list" 2>"$FWH_CASE_TMP/list.err" || return 1
	! grep -qF e100/ "$FWH_CASE_TMP/list"
}
replug_nics() {
	udevadm monitor --udev --subsystem-match=pci >"$FWH_CASE_TMP/pci-events" 2>&1 &
	_mon=$!
	sleep 0.5
	modprobe -r e100
	for _d in "$ER" "$F"; do
		[ -e "$_d/remove" ] && echo 1 >"$_d/remove"
	done
	udevadm settle -t 30
	# The daemon forgets a device's names when it hears of its removal, and keeps them
	# if the device is back by then: let it hear before the rescan brings them back.
	wait_until 20 e100_forgotten || forgotten=no
	kill "$_mon" 2>/dev/null
	echo 1 >/sys/bus/pci/rescan
	udevadm settle -t 30
	# shellcheck disable=SC2034 # read by at_exit
	replugged=1
}
# shellcheck disable=SC2016 # evaluated at exit
at_exit '[ -n "${replugged:-}" ] || replug_nics'
udevadm settle -t 30
wait_until 10 sh -c "ls $ER/net/* $F/net/* >/dev/null 2>&1" || fail "no network interfaces from e100"
ER_IF=$(ls "$ER/net") F_IF=$(ls "$F/net")
info "e100 bound: $ER_IF, $F_IF; probe messages:"
kmsg_since | sed 's/^/  | /'
# Probe asks for nothing: the request comes with the first ifup.
sleep 1
[ -z "$(pending_requests)" ] || fail "pending requests after probe: $(pending_requests)"
kmsg_since | grep -q 'e100/' && fail "firmware named in the kernel log at probe"
journal_since_mark _SYSTEMD_UNIT="$FWH_UNIT" FIRMWARE=e100/d101s_ucode.bin | grep -q . \
	&& fail "fw-helperd saw an e100 request at probe"
info "probe: no firmware request"

# link_up IFACE: `ip link set up`, its exit status; LINK_MS is the time it took.
link_up() {
	_t0=$(now_ms)
	busybox ip link set dev "$1" up 2>"$FWH_CASE_TMP/ip.err"
	_rc=$?
	LINK_MS=$(( $(now_ms) - _t0 ))
	return $_rc
}
link_down() {
	busybox ip link set dev "$1" down
}
# duration_ms MATCH...: FW_DURATION_USEC of fw-helperd's entry since the mark, in ms.
duration_ms() {
	_us=$(entry_field FW_DURATION_USEC _SYSTEMD_UNIT="$FWH_UNIT" "$@")
	echo $(( ${_us:-0} / 1000 ))
}
# via_uevent MATCH...: fw-helperd took the request from its "add" uevent (FW_EVENT kernel
# or udev, not its own scan of /sys/class/firmware); prints which.
via_uevent() {
	_ev=$(entry_field FW_EVENT _SYSTEMD_UNIT="$FWH_UNIT" "$@")
	case "$_ev" in
	kernel|udev) echo "$_ev" ;;
	*) fail "request $* not taken from a uevent (FW_EVENT='$_ev')" ;;
	esac
}
no_e100_errors() { # WHAT
	if kmsg_since | grep -E 'wrong size|bogus offset|ucode load failed|ucode cmd failed|Failed to load firmware|Cannot open interface'; then
		fail "$1: e100 complained (above)"
	fi
}

## The image absent: answered -1 at once, the driver goes on without it -----------------
journal_mark
kmsg_mark absent-er
link_up "$ER_IF" || fail "$ER_IF did not come up without its optional image: $(cat "$FWH_CASE_TMP/ip.err")"
wait_journal 10 _SYSTEMD_UNIT="$FWH_UNIT" FIRMWARE=e100/d101s_ucode.bin FW_RESULT=missing DEVPATH="$ER_DEVPATH"
kmsg_since | grep -q 'CPUSaver disabled. Needs "e100/d101s_ucode.bin": -2' \
	|| { kmsg_since; fail "no 'CPUSaver disabled ... -2' from e100"; }
took=$(duration_ms FIRMWARE=e100/d101s_ucode.bin FW_RESULT=missing)
ev=$(via_uevent FIRMWARE=e100/d101s_ucode.bin FW_RESULT=missing)
info "absent, i82559er: $ER_IF up in ${LINK_MS} ms, request (uevent from $ev) answered -1 in ${took} ms, e100: CPUSaver disabled (-ENOENT)"
assert_lt "$LINK_MS" 10000 "ifup of $ER_IF with the image absent (ms)"
link_down "$ER_IF"

journal_mark
kmsg_mark absent-f
link_up "$F_IF" && fail "$F_IF came up without its required image"
wait_journal 10 _SYSTEMD_UNIT="$FWH_UNIT" FIRMWARE=e100/d102e_ucode.bin FW_RESULT=missing DEVPATH="$F_DEVPATH"
took=$(duration_ms FIRMWARE=e100/d102e_ucode.bin FW_RESULT=missing)
ev=$(via_uevent FIRMWARE=e100/d102e_ucode.bin FW_RESULT=missing)
info "absent, i82551: ifup of $F_IF refused after ${LINK_MS} ms ($(cat "$FWH_CASE_TMP/ip.err")), request (uevent from $ev) answered -1 in ${took} ms; kernel:"
kmsg_since | sed 's/^/  | /'
assert_lt "$LINK_MS" 10000 "refused ifup of $F_IF (ms)"
if kernel_at_least 6.12; then
	kmsg_since | grep -q 'Failed to load firmware "e100/d102e_ucode.bin": -2' \
		|| { kmsg_since; fail "6.12's e100 did not report the failed load"; }
fi
[ -z "$(pending_requests)" ] || fail "requests left open: $(pending_requests)"

## The real image in $FWH_FW_DIR: served with the device's DEVPATH, accepted -------------
mkdir -p "$FWH_FW_DIR/e100"
cp "$REAL/d101s_ucode.bin" "$REAL/d102e_ucode.bin" "$FWH_FW_DIR/e100/"
for _f in d101s d102e; do
	_b=$FWH_FW_DIR/e100/${_f}_ucode.bin
	# What e100_request_firmware() checks: UCODE_SIZE (134) words + 3 offset bytes, each < 134.
	info "image $_b: $(stat -c %s "$_b") bytes, offsets $(tail -c 3 "$_b" | od -An -tu1 | tr -s ' ')"
done

journal_mark
kmsg_mark served-er
link_up "$ER_IF" || fail "$ER_IF did not come up with its image: $(cat "$FWH_CASE_TMP/ip.err")"
wait_journal 10 MESSAGE_ID="$MSG_SERVED" FIRMWARE=e100/d101s_ucode.bin FW_RESULT=served \
	DEVPATH="$ER_DEVPATH" FW_SIZE=539 FW_PATH="$FWH_FW_DIR/e100/d101s_ucode.bin"
no_e100_errors "$ER_IF"
kmsg_since | grep -q 'CPUSaver disabled' && { kmsg_since; fail "CPUSaver still disabled with the image served"; }
took=$(duration_ms FIRMWARE=e100/d101s_ucode.bin FW_RESULT=served)
ev=$(via_uevent FIRMWARE=e100/d101s_ucode.bin FW_RESULT=served)
info "served, i82559er: $ER_IF up in ${LINK_MS} ms, 539 bytes served in ${took} ms (uevent from $ev), DEVPATH=$ER_DEVPATH, no complaint from e100"
assert_lt "$LINK_MS" 10000 "ifup of $ER_IF with the image served (ms)"

journal_mark
kmsg_mark served-f
link_up "$F_IF" || { kmsg_since; fail "$F_IF did not come up with its required image: $(cat "$FWH_CASE_TMP/ip.err")"; }
wait_journal 10 MESSAGE_ID="$MSG_SERVED" FIRMWARE=e100/d102e_ucode.bin FW_RESULT=served \
	DEVPATH="$F_DEVPATH" FW_SIZE=539 FW_PATH="$FWH_FW_DIR/e100/d102e_ucode.bin"
no_e100_errors "$F_IF"
took=$(duration_ms FIRMWARE=e100/d102e_ucode.bin FW_RESULT=served)
ev=$(via_uevent FIRMWARE=e100/d102e_ucode.bin FW_RESULT=served)
info "served, i82551: $F_IF up in ${LINK_MS} ms (it needs the microcode: size, offsets and the load command passed), served in ${took} ms (uevent from $ev), DEVPATH=$F_DEVPATH"
assert_eq "$(( $(cat "/sys/class/net/$F_IF/flags") & 1 ))" 1 "IFF_UP of $F_IF"

# Down and up again: e100 keeps the image, no second request.
link_down "$F_IF"
journal_mark
link_up "$F_IF" || fail "$F_IF did not come up a second time"
sleep 1
journal_since_mark _SYSTEMD_UNIT="$FWH_UNIT" FIRMWARE=e100/d102e_ucode.bin | grep -q . \
	&& fail "a second ifup asked again"
info "second ifup of $F_IF: no request (the driver holds the image)"
link_down "$F_IF"
link_down "$ER_IF"

fwctl list | grep -F 'e100/' | sed 's/^/  fwctl list: /'
replug_nics
if [ -n "${forgotten:-}" ] || ! e100_forgotten; then
	grep -F e100/ "$FWH_CASE_TMP/list"
	cat "$FWH_CASE_TMP/list.err"
	journal_since_mark _SYSTEMD_UNIT="$FWH_UNIT" | tail -n 30
	sed 's/^/  udev: /' "$FWH_CASE_TMP/pci-events"
	fail "fw-helperd still lists e100 names after the NICs went away (wait: ${forgotten:-ok})"
fi
# How it knew: from the removal uevents, or by looking when asked (a removal not heard of).
info "fw-helperd on the removal: $(journal_since_mark _SYSTEMD_UNIT="$FWH_UNIT" |
	grep -E 'went away' | sed 's/.*fw-helperd\[[0-9]*\]: //' | tr '\n' ' ')"
[ -e "$ER/vendor" ] && [ -e "$F/vendor" ] || fail "the NICs did not come back after the PCI rescan"
lsmod | grep -q '^e100 ' && fail "e100 loaded again after the rescan (autoload not blacklisted?)"
info "e100 unloaded, NICs removed and rescanned: back without a driver, no e100 name left in fw-helperd's registry"
