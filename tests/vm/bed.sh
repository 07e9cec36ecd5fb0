# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Host side shared by the two beds, run.sh (the rootfs as initramfs) and
# run-disk.sh (an installed Debian on a virtual disk): sourced by both after
# they set $here, $repo and $series.

accel=${FWH_VM_ACCEL:-tcg}
vm_timeout=${FWH_VM_TIMEOUT:-3000}
case_timeout=${FWH_VM_CASE_TIMEOUT:-420}
build=${FWH_VM_BUILDDIR:-$repo/build-vm}

log() { echo "vm: $*" >&2; }
die() { log "$*"; exit 1; }
# Without a kernel or root there is nothing to boot; still end with the
# summary line that callers look for.
setup_failed() { log "$* failed"; echo "vm: 0 passed, 1 failed"; exit 1; }
t_start=$(date +%s%N)
elapsed() { echo "$(( ($(date +%s%N) - t_start) / 1000000 ))ms"; }

command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing: run tests/setup-deps.sh"

# bed_rundir TAG: a fresh run directory (logs) in $run.
bed_rundir() {
	mkdir -p "$build"
	run=${FWH_VM_LOGDIR:-$build/vm-logs}/$(date +%Y%m%d-%H%M%S)-$1-$$
	mkdir -p "$run"
	log "logs in $run"
}

# bed_qemu_base KERNEL INITRD: the machine both beds boot, in the array
# qemu: 2 vCPUs, 2 GiB, no display, no network unless FWH_VM_QEMU_ARGS
# adds a device (qemu's default NIC would be user networking to the
# outside), exit instead of rebooting.
bed_qemu_base() {
	local extra
	read -ra extra <<<"${FWH_VM_QEMU_ARGS:-}"
	qemu=(qemu-system-x86_64 -m 2G -smp 2 -nographic -no-reboot -monitor none -nic none
	      -kernel "$1" -initrd "$2" "${extra[@]}")
	case $accel in
	tcg) qemu+=(-accel tcg ${FWH_VM_CPU:+-cpu "$FWH_VM_CPU"}) ;;
	# This machine's /dev/kvm cannot run a stock kernel (README.md);
	# elsewhere KVM is ~20x faster.
	kvm) qemu+=(-accel kvm -cpu "${FWH_VM_CPU:-host}") ;;
	*) die "FWH_VM_ACCEL must be tcg or kvm" ;;
	esac
}

# bed_report RESULT_TXT CONSOLE_LOG QEMU_RC VM_MS: the summary (report.awk)
# on stdout and in $run/summary.txt; returns non-zero if anything failed.
bed_report() {
	awk -v console="$2" -v qemu_rc="$3" -v vm_ms="$4" -f "$here/report.awk" "$1" \
		| tee "$run/summary.txt"
	return "${PIPESTATUS[0]}"
}
