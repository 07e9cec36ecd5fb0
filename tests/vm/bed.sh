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
case_qemu_args=()
elapsed() { echo "$(( ($(date +%s%N) - t_start) / 1000000 ))ms"; }

command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing: run tests/setup-deps.sh"

# bed_rundir TAG: a fresh run directory (logs) in $run.
bed_rundir() {
	mkdir -p "$build"
	run=${FWH_VM_LOGDIR:-$build/vm-logs}/$(date +%Y%m%d-%H%M%S)-$1-$$
	mkdir -p "$run"
	log "logs in $run"
}

# bed_case_qemu_args CASEDIR: devices the selected cases ask for, in the
# array case_qemu_args. A case may carry lines
#   # fwh-vm-qemu: -netdev hubport,id=x,hubid=7 -device i82559er,netdev=x
# (words split on blanks, identical lines once). A boot gets them only when
# such a case is selected ($cases, the runner's rule: a glob matches the name
# with or without .sh), so other runs keep the bare machine.
bed_case_qemu_args() {
	local line words f
	case_qemu_args=()
	while read -r line; do
		[ -n "$line" ] || continue
		read -ra words <<<"$line"
		case_qemu_args+=("${words[@]}")
	done < <(for f in "$1"/*; do
			_bed_selected "$(basename "$f" .sh)" || continue
			sed -n 's/^# fwh-vm-qemu: *//p' "$f"
		done | awk '!seen[$0]++')
	[ ${#case_qemu_args[@]} -eq 0 ] || log "devices for the cases: ${case_qemu_args[*]}"
}
# bed_selected_cases DIR: the names (without .sh) of the cases in DIR that $cases
# selects, one per line, in the runner's order.
bed_selected_cases() {
	local f
	for f in "$1"/*; do
		f=${f##*/}
		if _bed_selected "${f%.*}"; then echo "${f%.*}"; fi
	done | LC_ALL=C sort
}
_bed_selected() {
	local g globs
	IFS=, read -ra globs <<<"$cases"     # read: no pathname expansion of '*'
	for g in "${globs[@]}"; do
		# shellcheck disable=SC2053 # a glob
		[[ $1 == $g || $1.sh == $g ]] && return 0
	done
	return 1
}

# bed_real_firmware DIR: real firmware images for cases with a real driver
# (cases/60-real-driver.sh), the few a driver of the guest asks for, not the
# whole package: DIR/e100/*.bin. A warning if they cannot be had.
bed_real_firmware() {
	local fw_pkg
	if fw_pkg=$("$here/firmware-package.sh" 2>"$run/firmware.log"); then
		mkdir -p "$1/e100"
		cp "$fw_pkg"/e100/*.bin "$1/e100/"
	else
		log "WARNING: no real firmware for the payload (see $run/firmware.log)"
		tail -n 5 "$run/firmware.log" | sed 's/^/vm:   /' >&2
	fi
}

# bed_qemu_base KERNEL INITRD: the machine both beds boot, in the array
# qemu: 2 vCPUs, 2 GiB, no display, exit instead of rebooting; no network
# unless a case (bed_case_qemu_args) or FWH_VM_QEMU_ARGS (any boot, split on
# blanks) adds a device: qemu's default NIC would be user networking to the
# outside.
bed_qemu_base() {
	local extra
	read -ra extra <<<"${FWH_VM_QEMU_ARGS:-}"
	[ ${#extra[@]} -eq 0 ] || log "FWH_VM_QEMU_ARGS: ${extra[*]}"
	qemu=(qemu-system-x86_64 -m 2G -smp 2 -nographic -no-reboot -monitor none -nic none
	      -kernel "$1" -initrd "$2" "${case_qemu_args[@]}" "${extra[@]}")
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

# bed_tcg_int3 CONSOLE_LOG: true if the guest kernel died of an "Oops: int3"
# outside any module: a CPU ran a breakpoint the kernel had already patched
# away (static keys, jump labels). Debian's qemu 7.2, multi-threaded TCG, now
# and then lets a vCPU run stale translated code after the kernel's
# text_poke_sync(); do_int3() then panics "Fatal exception in interrupt".
# A defect of the emulator, not of what a case tests (README.md).
bed_tcg_int3() {
	[ "$accel" = tcg ] || return 1
	tr -d '\r' <"$1" | awk '
		/Oops: int3/ { oops = 1; next }
		oops && /RIP: 0010:/ { exit ($0 ~ /RIP: 0010:.*\[/) ? 1 : 0 }   # "[module]": not the kernel
		END { if (!oops) exit 1 }'
}

# bed_tell_int3 CONSOLE_LOG: says so, with the oops' first lines.
bed_tell_int3() {
	log "the guest kernel died of 'Oops: int3' (qemu's TCG ran code the kernel had patched; $1):"
	grep -a -m1 -A2 'Oops: int3' "$1" | sed 's/^/vm:   /' >&2 || true
}

# bed_unreported RESULT_TXT NAME...: the NAMEs with no ok/not ok line in
# RESULT_TXT, in order.
bed_unreported() {
	local result=$1 name
	shift
	for name; do
		grep -Eq "^(not )?ok [0-9]+ - $name( #.*)?\$" "$result" || echo "$name"
	done
}
