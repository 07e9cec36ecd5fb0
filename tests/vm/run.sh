#!/bin/bash
# SPDX-License-Identifier: MIT
#
# run.sh [--kernel 6.1|6.12] [--cases GLOB[,GLOB]] [--demo] [--keep]
#
# Builds fw-helperd (and module/ against the chosen kernel), boots Debian's
# stock kernel under qemu with the cached rootfs plus a payload of the build
# and the test cases, and reports the cases' results. See README.md.
#
#   --kernel  kernel series (default 6.1)
#   --cases   case names (without .sh) to run, shell globs (default all)
#   --demo    show the guest console live while it runs
#   --keep    keep the payload; leave the guest up with a root shell on
#             the terminal after the cases (`poweroff` ends it; killed
#             after an hour)
set -euo pipefail

# Parse the whole script before running it: a checkout edited while a run is
# going (bash reads scripts as it goes) must not change that run.
{

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
series=6.1
cases='*'
demo=0
keep=0

usage() { sed -n '4,15s/^# \{0,1\}//p' "$0"; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) series=${2:?}; shift ;;
	--kernel=*) series=${1#*=} ;;
	--cases) cases=${2:?}; shift ;;
	--cases=*) cases=${1#*=} ;;
	--demo) demo=1 ;;
	--keep) keep=1 ;;
	-h|--help) usage 0 ;;
	*) usage ;;
	esac
	shift
done

accel=${FWH_VM_ACCEL:-tcg}
vm_timeout=${FWH_VM_TIMEOUT:-3000}
case_timeout=${FWH_VM_CASE_TIMEOUT:-420}
build=${FWH_VM_BUILDDIR:-$repo/build-vm}

log() { echo "vm: $*" >&2; }
die() { log "$*"; exit 1; }
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing: run tests/setup-deps.sh"

mkdir -p "$build"
run=${FWH_VM_LOGDIR:-$build/vm-logs}/$(date +%Y%m%d-%H%M%S)-$series-$$
mkdir -p "$run"
log "logs in $run"
t_start=$(date +%s%N)
elapsed() { echo "$(( ($(date +%s%N) - t_start) / 1000000 ))ms"; }

# --- kernel and rootfs (cached) ------------------------------------------------
# Without a kernel or root there is nothing to boot; still end with the
# summary line that callers look for.
setup_failed() { log "$* failed"; echo "vm: 0 passed, 1 failed"; exit 1; }
kernel_env=$("$here/kernel.sh" "$series") || setup_failed "kernel.sh $series"
eval "$kernel_env"
rootfs_env=$("$here/rootfs.sh") || setup_failed rootfs.sh
eval "$rootfs_env"
log "kernel $KRELEASE ($KPKGVER), rootfs ${ROOTFS_CPIO#"${FWH_CACHE:-$HOME/.cache/fw-helperd}/"} ready after $(elapsed)"

payload=$run/payload
rm -rf "$payload"
mkdir -p "$payload"

# Two runs (one per kernel) may share the build dir.
exec 8>"$build/.vm-lock"
flock 8

# --- fw-helperd -----------------------------------------------------------------
# A build that fails (parts of the daemon still missing) does not stop the
# run: the cases that need the daemon skip themselves (need_fw_helperd).
if { [ -f "$build/build.ninja" ] || meson setup --prefix=/usr --sysconfdir=/etc \
		--localstatedir=/var --libexecdir=lib/fw-helperd "$build" "$repo"; } >"$run/build.log" 2>&1 \
	&& meson compile -C "$build" >>"$run/build.log" 2>&1 \
	&& meson install -C "$build" --no-rebuild --destdir "$payload" >>"$run/build.log" 2>&1; then
	log "fw-helperd built and installed into the payload ($(elapsed))"
else
	log "WARNING: fw-helperd did not build; running the cases without it (see $run/build.log)"
	tail -n 15 "$run/build.log" | sed 's/^/vm:   /' >&2
	# A half-finished install would be worse than none.
	rm -rf "$payload"
	mkdir -p "$payload"
fi

# --- module/, built against the guest's kernel -----------------------------
vmtest=$payload/usr/lib/fwh-vmtest
mkdir -p "$vmtest/modules"
if [ -f "$repo/module/Makefile" ]; then
	# A private copy per kernel: objects of one kernel never leak into the
	# other's build, and the source tree stays clean. cp -a keeps mtimes
	# so kbuild rebuilds only what changed.
	mod_build=$build/module-$KRELEASE
	mkdir -p "$mod_build"
	cp -a "$repo/module/." "$mod_build/"
	btf=()
	command -v pahole >/dev/null || btf=(CONFIG_DEBUG_INFO_BTF_MODULES=)
	if make -C "$mod_build" KDIR="$KDIR" "${btf[@]}" >"$run/module-build.log" 2>&1; then
		find "$mod_build" -name '*.ko' -exec cp {} "$vmtest/modules/" \;
		log "module/ built for $KRELEASE: $(cd "$vmtest/modules" && echo *.ko)"
		# In-tree modules they depend on, beyond kernel.sh's subset;
		# setup.sh's depmod picks them up.
		for ko in "$vmtest"/modules/*.ko; do
			for dep in $(modinfo -F depends "$ko" | tr , ' '); do
				f=$(grep -E "/${dep//_/[-_]}\.ko(\.[a-z]+)?:" "$MODULES_DIR/modules.dep" | cut -d: -f1) || true
				[ -n "$f" ] || continue
				for g in $(grep "^$f:" "$MODULES_DIR/modules.dep" | tr -d :); do
					mkdir -p "$payload/usr/lib/modules/$KRELEASE/${g%/*}"
					cp -n "$MODULES_DIR/$g" "$payload/usr/lib/modules/$KRELEASE/$g"
				done
			done
		done
	else
		log "WARNING: module/ did not build against $KRELEASE (see $run/module-build.log)"
		tail -n 15 "$run/module-build.log" | sed 's/^/vm:   /' >&2
	fi
fi
flock -u 8

# --- the test bed itself ---------------------------------------------------------
# guest/*.sh: the runner, lib.sh and helper libraries for cases.
install -m 0755 "$here"/guest/*.sh "$vmtest/"
mkdir -p "$vmtest/cases" "$vmtest/peers" "$payload/usr/lib/systemd/system"
# FWH_VM_EXTRA_CASES: more case directories (space-separated), e.g. for
# benchmarks that live elsewhere; same naming and selection rules.
for f in "$here"/cases/* ${FWH_VM_EXTRA_CASES:+$(for d in $FWH_VM_EXTRA_CASES; do echo "$d"/*; done)}; do
	[ -f "$f" ] && install -m 0755 "$f" "$vmtest/cases/"
done
for f in "$here"/peers/*; do
	[ -f "$f" ] && install -m 0755 "$f" "$vmtest/peers/"
done

# Devices the selected cases ask for: a case may carry lines
#   # fwh-vm-qemu: -netdev hubport,id=x,hubid=7 -device i82559er,netdev=x
# (words split on blanks, identical lines once). A boot gets them only when such
# a case is selected, so other runs keep the bare machine. The runner's rule:
# a glob matches the name with or without .sh.
IFS=, read -ra case_globs <<<"$cases"      # read: no pathname expansion of '*'
selected() {
	local g
	for g in "${case_globs[@]}"; do
		# shellcheck disable=SC2053 # a glob
		[[ $1 == $g || $1.sh == $g ]] && return 0
	done
	return 1
}
case_qemu_args=()
while read -r line; do
	[ -n "$line" ] || continue
	read -ra words <<<"$line"
	case_qemu_args+=("${words[@]}")
done < <(for f in "$vmtest"/cases/*; do
		selected "$(basename "$f" .sh)" || continue
		sed -n 's/^# fwh-vm-qemu: *//p' "$f"
	done | awk '!seen[$0]++')
# FWH_VM_QEMU_ARGS: more, for any boot (also split on blanks).
read -ra env_qemu_args <<<"${FWH_VM_QEMU_ARGS:-}"

# Real firmware images for cases with a real driver (cases/60-real-driver.sh):
# the few a driver of the guest asks for, not the whole package.
if fw_pkg=$("$here/firmware-package.sh" 2>"$run/firmware.log"); then
	mkdir -p "$vmtest/real-firmware/e100"
	cp "$fw_pkg"/e100/*.bin "$vmtest/real-firmware/e100/"
else
	log "WARNING: no real firmware for the payload (see $run/firmware.log)"
	tail -n 5 "$run/firmware.log" | sed 's/^/vm:   /' >&2
fi
# Drivers a case binds itself, at its own time and undone when it ends, rather
# than at boot for every case (a bound e100 would add its MODULE_FIRMWARE names to
# fw-helperd's hints). modprobe by name still loads them.
mkdir -p "$payload/etc/modprobe.d"
cat >"$payload/etc/modprobe.d/fwh-vmtest.conf" <<-'EOF'
	# tests/vm/run.sh: no autoloading; cases/60-real-driver.sh loads e100 itself.
	blacklist e100
EOF
install -m 0644 "$here"/guest/*.service "$payload/usr/lib/systemd/system/"

# Enable what was installed as `systemctl enable` would on a host: the
# [Install] sections become wants/alias symlinks in the payload's /etc.
units=$(cd "$payload" && find lib/systemd/system usr/lib/systemd/system -maxdepth 1 \
	\( -name '*.service' -o -name '*.socket' -o -name '*.timer' -o -name '*.path' \) \
	-printf '%f\n' 2>/dev/null | sort -u || true)
for u in $units; do
	systemctl --root="$payload" --quiet enable "$u" 2>>"$run/enable.log" || true
done

# The guest's /lib, /bin, /sbin are symlinks into /usr (merged /usr): an
# archive entry "lib" would be unpacked onto the symlink, so move such
# trees under usr/ first.
for d in lib bin sbin lib64; do
	if [ -d "$payload/$d" ] && [ ! -L "$payload/$d" ]; then
		mkdir -p "$payload/usr/$d"
		cp -a "$payload/$d/." "$payload/usr/$d/"
		rm -rf "${payload:?}/$d"
	fi
done
# Catalog entries take effect only once merged into the guest's database.
ls "$payload"/usr/lib/systemd/catalog/*.catalog >/dev/null 2>&1 && touch "$vmtest/update-catalog"

# Directories the image already has keep its mode and owner (the kernel
# applies each archive entry's mode, also to an existing directory).
(cd "$payload" && find . -mindepth 1 -type d -printf '%P\n') | sort >"$run/payload-dirs"
sort "$ROOTFS_DIRS" | join - "$run/payload-dirs" >"$run/payload-dirs-known" || true
while read -r path mode uid gid; do
	chmod "$mode" "$payload/$path"
	chown "$uid:$gid" "$payload/$path"
done <"$run/payload-dirs-known"

(cd "$payload" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc) >"$run/payload.cpio"

# One initrd: the kernel unpacks concatenated archives, each starting at a
# 4-byte boundary, later ones adding to and overriding earlier ones.
initrd=$run/initrd.img
: >"$initrd"
for part in "$ROOTFS_CPIO" "$MODULES_CPIO" "$run/payload.cpio"; do
	cat "$part" >>"$initrd"
	truncate -s %4 "$initrd"
done
[ $keep = 1 ] || rm -rf "$payload" "$run/payload.cpio"

# --- boot -------------------------------------------------------------------------
# -nic none: no network unless a case or FWH_VM_QEMU_ARGS adds a device (and
# qemu's default NIC would be user networking to the outside).
qemu=(qemu-system-x86_64 -m 2G -smp 2 -nographic -no-reboot -monitor none -nic none
      -kernel "$VMLINUZ" -initrd "$initrd" "${case_qemu_args[@]}" "${env_qemu_args[@]}")
case $accel in
tcg) qemu+=(-accel tcg ${FWH_VM_CPU:+-cpu "$FWH_VM_CPU"}) ;;
# This machine's /dev/kvm cannot run a stock kernel (README.md); elsewhere
# KVM is ~20x faster.
kvm) qemu+=(-accel kvm -cpu "${FWH_VM_CPU:-host}") ;;
*) die "FWH_VM_ACCEL must be tcg or kvm" ;;
esac
# panic=-1 + -no-reboot: a kernel panic ends qemu instead of hanging.
append="console=ttyS0 panic=-1 mitigations=off fwh.cases=$cases fwh.case_timeout=$case_timeout"
[ $keep = 1 ] && append="$append fwh.keep=1"
echo "$append" >"$run/cmdline"
: >"$run/console.log"
: >"$run/result.log"

log "booting $KRELEASE ($accel), cases '$cases' ($(elapsed))"
[ ${#case_qemu_args[@]} -gt 0 ] && log "devices for the cases: ${case_qemu_args[*]}"
[ ${#env_qemu_args[@]} -gt 0 ] && log "FWH_VM_QEMU_ARGS: ${env_qemu_args[*]}"
printf '%s\n' "${qemu[@]}" >"$run/qemu-args"
t_boot=$(date +%s%N)
rc=0
if [ $keep = 1 ]; then
	# Interactive, but still bounded: an hour, or FWH_VM_TIMEOUT if longer.
	timeout --foreground -k 10 "$(( vm_timeout > 3600 ? vm_timeout : 3600 ))" \
		"${qemu[@]}" -append "$append" -serial mon:stdio -serial file:"$run/result.log" || rc=$?
else
	tail_pid=
	if [ $demo = 1 ]; then
		tail -n +1 -f "$run/console.log" &
		tail_pid=$!
	fi
	timeout -k 10 "$vm_timeout" "${qemu[@]}" -append "$append" \
		-serial file:"$run/console.log" -serial file:"$run/result.log" </dev/null || rc=$?
	[ -n "$tail_pid" ] && kill "$tail_pid" 2>/dev/null
fi
boot_s=$(( ($(date +%s%N) - t_boot) / 1000000 ))
# The initrd is mostly the cached rootfs: no need to keep a copy per run.
[ $keep = 1 ] || rm -f "$initrd"
[ $rc = 124 ] && log "qemu killed after ${vm_timeout}s (FWH_VM_TIMEOUT)"

# --- report ------------------------------------------------------------------------
tr -d '\r' <"$run/result.log" >"$run/result.txt"
status=0
awk -v console="$run/console.log" -v qemu_rc="$rc" -v vm_ms="$boot_s" '
	/^1\.\./ { planned = substr($0, 4) + 0; next }
	/^# done$/ { done = 1; next }
	/^# time / { next }
	/^ok / {
		print; started = 1; infail = 0
		if ($0 ~ /# SKIP/) skipped++; else passed++
		next
	}
	/^not ok / { print; started = 1; infail = 1; failed++; next }
	# Header lines, then the details of failed cases only.
	!started { print; next }
	infail { print "    " $0 }
	END {
		reported = passed + failed + skipped
		if (!done) {
			missing = planned - reported
			if (missing < 1) missing = 1
			failed += missing
			printf "not ok - guest never reported done (qemu exit %d after %d ms); %d case(s) unreported; console tail:\n", qemu_rc, vm_ms, missing
			while ((getline line < console) > 0) {
				gsub(/\033\[[0-9;]*m/, "", line)     # systemd status colours
				tail[n++ % 40] = line
			}
			for (i = (n > 40 ? n - 40 : 0); i < n; i++) print "    " tail[i % 40]
		}
		if (done && planned == 0) {
			print "not ok - no case matched the selection"
			failed++
		}
		summary = sprintf("vm: %d passed, %d failed", passed, failed)
		if (skipped) summary = summary sprintf(", %d skipped", skipped)
		print summary
		exit failed ? 1 : 0
	}' "$run/result.txt" | tee "$run/summary.txt" || status=$?
log "qemu ran ${boot_s}ms, whole run $(elapsed); logs in $run"
exit "$status"
}
