#!/bin/bash
# SPDX-License-Identifier: MIT
#
# run-disk.sh [--kernel 6.1|6.12] [--cases GLOB[,GLOB]] [--demo] [--narrate] [--keep]
# (also: run.sh --bed disk ...)
#
# The disk bed: boots an installed Debian 12 (disk.sh: ext4 root on
# virtio-blk, the stock kernel and Debian's initramfs installed by dpkg)
# from a qcow2 overlay of the cached image, with the .debs under test and
# tests/vm/disk-cases/ on a second disk, and reports the cases' results in
# run.sh's format. Cases may reboot the guest (reboot_then_continue); each
# reboot boots the same overlay with the initrd the guest left in /boot.
#
#   --kernel  kernel series (default 6.1)
#   --cases   case names (without .sh) to run, shell globs (default all)
#   --demo    show the guest console live while it runs
#   --narrate show live what the cases tell (lines "demo| ..." on the result port)
#   --keep    keep the overlay and payload disks in the run directory
#
# The .debs: FWH_VM_DEBS=DIR (*.deb, prev/*.deb) if set, else
# tests/pkg/build.sh --with-prev --out build-vm/debs.
set -euo pipefail

# Parse the whole script before running it: a checkout edited while a run is
# going (bash reads scripts as it goes) must not change that run.
{

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
series=6.1
cases='*'
demo=0
narrate=0
keep=0

usage() { sed -n '4,20s/^# \{0,1\}//p' "$0"; exit "${1:-2}"; }
orig_args=("$@")
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) series=${2:?}; shift ;;
	--kernel=*) series=${1#*=} ;;
	--cases) cases=${2:?}; shift ;;
	--cases=*) cases=${1#*=} ;;
	--demo) demo=1 ;;
	--narrate) narrate=1 ;;
	--keep) keep=1 ;;
	-h|--help) usage 0 ;;
	*) usage ;;
	esac
	shift
done

. "$here/bed.sh"
bed_rundir "disk-$series"
max_boots=${FWH_VM_MAX_BOOTS:-6}
# dkms builds the module in the guest, under TCG: minutes on a busy host.
case_timeout=${FWH_VM_CASE_TIMEOUT:-900}

# --- image (cached) ------------------------------------------------------------
disk_env=$("$here/disk.sh" "$series") || setup_failed "disk.sh $series"
eval "$disk_env"
log "kernel $KRELEASE ($KPKGVER), image ${DISK_IMAGE#"${FWH_CACHE:-$HOME/.cache/fw-helperd}/"} ready after $(elapsed)"

# --- the packages under test ---------------------------------------------------
payload=$run/payload
mkdir -p "$payload/debs/prev"
if [ -n "${FWH_VM_DEBS:-}" ]; then
	debs=$FWH_VM_DEBS
elif [ -x "$repo/tests/pkg/build.sh" ]; then
	debs=$build/debs
	# Two runs (one per kernel) may share the build dir.
	exec 8>"$build/.debs-lock"
	flock 8
	"$repo/tests/pkg/build.sh" --with-prev --out "$debs" >"$run/pkg-build.log" 2>&1 \
		|| { tail -n 20 "$run/pkg-build.log" | sed 's/^/vm:   /' >&2; setup_failed "tests/pkg/build.sh (see $run/pkg-build.log)"; }
	flock -u 8
else
	debs=
	log "WARNING: no tests/pkg/build.sh and no FWH_VM_DEBS: the package cases skip themselves"
fi
if [ -n "$debs" ]; then
	cp "$debs"/*.deb "$payload/debs/" 2>/dev/null || true
	cp "$debs"/prev/*.deb "$payload/debs/prev/" 2>/dev/null || true
	log "packages: $(cd "$payload/debs" && echo *.deb prev/*.deb) ($(elapsed))"
fi

# --- payload disk: test library, runner, cases, packages -----------------------
install -m 0755 "$here"/guest/*.sh "$payload/"
mkdir -p "$payload/cases" "$payload/peers"
for f in "$here"/disk-cases/* ${FWH_VM_EXTRA_CASES:+$(for d in $FWH_VM_EXTRA_CASES; do echo "$d"/*; done)}; do
	[ -f "$f" ] && install -m 0755 "$f" "$payload/cases/"
done
for f in "$here"/peers/*; do
	[ -f "$f" ] && install -m 0755 "$f" "$payload/peers/"
done
bed_case_qemu_args "$payload/cases"
bed_real_firmware "$payload/real-firmware"
truncate -s "$(( $(du -sm "$payload" | cut -f1) + 32 ))M" "$run/payload.img"
mkfs.ext4 -q -F -L fwh-payload -d "$payload" "$run/payload.img"
# Where the guest leaves its initrd before a reboot (raw bytes).
truncate -s 512M "$run/exchange.img"
# Every run starts from the pristine image.
qemu-img create -q -f qcow2 -b "$DISK_IMAGE" -F raw "$run/overlay.qcow2"

# --- boot, and boot again for as long as the guest asks to ------------------------
# panic=-1 + -no-reboot: a kernel panic ends qemu instead of hanging.
append="console=ttyS0 root=/dev/vda ro panic=-1 mitigations=off fwh.bed=disk fwh.cases=$cases fwh.case_timeout=$case_timeout"
append="$append${FWH_VM_APPEND:+ $FWH_VM_APPEND}"
echo "$append" >"$run/cmdline"
initrd=$DISK_INITRD
boot=1
rc=0
deadline=$(( $(date +%s) + vm_timeout ))
t_boot=$(date +%s%N)
: >"$run/result.txt"
: >"$run/console.log"
while :; do
	bed_qemu_base "$DISK_VMLINUZ" "$initrd"
	# vda, vdb, vdc in this order; the guest finds the latter two by
	# label and serial (/dev/disk/by-id/virtio-fwh-exchange).
	qemu+=(-drive "file=$run/overlay.qcow2,format=qcow2,if=none,id=root"
	       -device virtio-blk-pci,drive=root,serial=fwh-root
	       -drive "file=$run/payload.img,format=raw,if=none,id=payload,readonly=on"
	       -device virtio-blk-pci,drive=payload,serial=fwh-payload
	       -drive "file=$run/exchange.img,format=raw,if=none,id=exchange"
	       -device virtio-blk-pci,drive=exchange,serial=fwh-exchange)
	left=$(( deadline - $(date +%s) ))
	[ $left -gt 0 ] || { rc=124; break; }
	log "boot $boot: $KRELEASE ($accel), cases '$cases' ($(elapsed))"
	tail_pid=
	: >"$run/console-$boot.log"
	: >"$run/result-$boot.log"
	if [ $demo = 1 ]; then
		tail -n +1 -f "$run/console-$boot.log" &
		tail_pid=$!
	elif [ $narrate = 1 ]; then
		tail -n +1 -f "$run/result-$boot.log" | tr -d '\r' | sed -nu 's/^demo| //p' &
		tail_pid=$!
	fi
	t=$(date +%s%N)
	rc=0
	timeout -k 10 "$left" "${qemu[@]}" -append "$append" \
		-serial file:"$run/console-$boot.log" -serial file:"$run/result-$boot.log" </dev/null || rc=$?
	[ -n "$tail_pid" ] && kill "$tail_pid" 2>/dev/null
	# the narrating pipeline's tail outlives its sed
	[ $narrate = 0 ] || pkill -f "tail -n +1 -f $run/result-$boot.log" || true
	log "boot $boot: qemu ran $(( ($(date +%s%N) - t) / 1000000 ))ms (exit $rc)"
	tr -d '\r' <"$run/result-$boot.log" >>"$run/result.txt"
	cat "$run/console-$boot.log" >>"$run/console.log"
	size=$(tr -d '\r' <"$run/result-$boot.log" | sed -n 's/^# reboot initrd \([0-9][0-9]*\)$/\1/p' | tail -n1)
	[ -n "$size" ] && [ $rc = 0 ] || break
	if [ $boot -ge "$max_boots" ]; then
		log "the guest asked for boot $((boot + 1)), more than FWH_VM_MAX_BOOTS=$max_boots"
		break
	fi
	boot=$((boot + 1))
	# The initrd the guest has now (update-initramfs may have rebuilt it).
	head -c "$size" "$run/exchange.img" >"$run/initrd-$boot.img"
	initrd=$run/initrd-$boot.img
done
boot_s=$(( ($(date +%s%N) - t_boot) / 1000000 ))
[ $rc = 124 ] && log "qemu killed after ${vm_timeout}s in all (FWH_VM_TIMEOUT)"
[ $keep = 1 ] || rm -rf "$payload" "$run/payload.img" "$run/exchange.img" "$run/overlay.qcow2" "$run"/initrd-*.img

# --- report ------------------------------------------------------------------------
# A run the guest kernel did not survive for the emulator's defect
# (bed_tcg_int3, README.md) is made once more, whole: the disk is mid-case.
# It gets what is left of FWH_VM_TIMEOUT, if that is worth a try (5 min).
left=$(( deadline - $(date +%s) ))
if [ $keep = 0 ] && [ -z "${FWH_VM_INT3_RUN:-}" ] && ! grep -qx '# done' "$run/result.txt" \
	&& bed_tcg_int3 "$run/console.log"; then
	bed_tell_int3 "$run/console.log"
	if [ $left -ge 300 ]; then
		log "the whole disk bed once more, from the pristine image, in the ${left}s left"
		FWH_VM_INT3_RUN=$run FWH_VM_TIMEOUT=$left exec "$0" "${orig_args[@]}"
	fi
	log "no second run: ${left}s left of FWH_VM_TIMEOUT"
fi
[ -z "${FWH_VM_INT3_RUN:-}" ] || log "a second run: the first died of the guest kernel's 'Oops: int3' (logs in $FWH_VM_INT3_RUN)"
status=0
bed_report "$run/result.txt" "$run/console.log" "$rc" "$boot_s" || status=$?
log "$boot boot(s), qemu ran ${boot_s}ms, whole run $(elapsed); logs in $run"
exit "$status"
}
