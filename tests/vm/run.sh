#!/bin/bash
# SPDX-License-Identifier: MIT
#
# run.sh [--bed fast|disk] [--kernel 6.1|6.12] [--cases GLOB[,GLOB]] [--demo] [--keep]
#
# Builds fw-helperd (and module/ against the chosen kernel), boots Debian's
# stock kernel under qemu with the cached rootfs plus a payload of the build
# and the test cases, and reports the cases' results. See README.md.
#
#   --bed     fast (default): the rootfs is the initramfs, build-vm/ and
#             module/ in the payload, cases/; disk: an installed Debian on
#             a virtual disk, the .debs, disk-cases/ (run-disk.sh)
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

usage() { sed -n '4,18s/^# \{0,1\}//p' "$0"; exit "${1:-2}"; }
bed=fast
args=()                         # all but --bed, for run-disk.sh
while [ $# -gt 0 ]; do
	case "$1" in
	--bed) bed=${2:?}; shift; shift; continue ;;
	--bed=*) bed=${1#*=}; shift; continue ;;
	--kernel|--cases) args+=("$1" "${2:?}") ;;
	*) args+=("$1") ;;
	esac
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
case $bed in
fast) ;;
disk) exec "$here/run-disk.sh" "${args[@]}" ;;
*) usage ;;
esac

. "$here/bed.sh"
bed_rundir "$series"

# --- kernel and rootfs (cached) ------------------------------------------------
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
# FWH_VM_EXTRA_PEERS: more peer files (space-separated), e.g. programs built
# for this run only (bench/run.sh: the floor peer).
for f in "$here"/peers/* ${FWH_VM_EXTRA_PEERS:-}; do
	[ -f "$f" ] && install -m 0755 "$f" "$vmtest/peers/"
done

bed_case_qemu_args "$vmtest/cases"
bed_real_firmware "$vmtest/real-firmware"
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
# The runner's choice of cases (for a second boot, see below).
selected=$(bed_selected_cases "$vmtest/cases")
[ $keep = 1 ] || rm -rf "$payload" "$run/payload.cpio"

# --- boot -------------------------------------------------------------------------
bed_qemu_base "$VMLINUZ" "$initrd"

# boot_once CONSOLE_LOG: one boot with $append; sets rc, adds to boot_s.
boot_once() {
	local t_boot tail_pid=
	t_boot=$(date +%s%N)
	rc=0
	if [ $keep = 1 ]; then
		# Interactive, but still bounded: an hour, or FWH_VM_TIMEOUT if longer.
		timeout --foreground -k 10 "$(( vm_timeout > 3600 ? vm_timeout : 3600 ))" \
			"${qemu[@]}" -append "$append" -serial mon:stdio -serial file:"$run/result.log" || rc=$?
	else
		if [ $demo = 1 ]; then
			tail -n +1 -f "$1" &
			tail_pid=$!
		fi
		timeout -k 10 "$vm_timeout" "${qemu[@]}" -append "$append" \
			-serial file:"$1" -serial file:"$run/result.log" </dev/null || rc=$?
		[ -n "$tail_pid" ] && kill "$tail_pid" 2>/dev/null
	fi
	boot_s=$(( boot_s + ($(date +%s%N) - t_boot) / 1000000 ))
	[ $rc != 124 ] || log "qemu killed after ${vm_timeout}s (FWH_VM_TIMEOUT)"
}
printf '%s\n' "${qemu[@]}" >"$run/qemu-args"

# A boot the guest kernel did not survive for a known emulator defect
# (bed_tcg_int3) is followed by one more, with the cases it left unreported.
: >"$run/result.txt"
boot_cases=$cases
boot_s=0
for attempt in 1 2; do
	console=$run/console.log
	[ "$attempt" = 1 ] || console=$run/console-$attempt.log
	# panic=-1 + -no-reboot: a kernel panic ends qemu instead of hanging.
	# log_buf_len: cases read the kernel's log since their start (dmesg); a whole
	# suite overflows the default ring buffer before the last cases.
	append="console=ttyS0 panic=-1 mitigations=off log_buf_len=16M fwh.cases=$boot_cases fwh.case_timeout=$case_timeout"
	append="$append${FWH_VM_APPEND:+ $FWH_VM_APPEND}"
	reported=$(grep -Ec '^(not )?ok [0-9]+ - ' "$run/result.txt" || true)
	append="$append fwh.first=$((reported + 1))"
	[ $keep = 1 ] && append="$append fwh.keep=1"
	echo "$append" >>"$run/cmdline"
	: >"$console"
	: >"$run/result.log"
	log "booting $KRELEASE ($accel), cases '$boot_cases' ($(elapsed))"
	boot_once "$console"
	if [ "$attempt" = 1 ]; then
		tr -d '\r' <"$run/result.log" >>"$run/result.txt"
	else
		# The plan stays the first boot's; the rest is reported as a later boot.
		tr -d '\r' <"$run/result.log" | sed '/^1\.\./d; s/^# boot-to-runner/# boot 2: boot-to-runner/' >>"$run/result.txt"
	fi
	# Only a first boot that died of the emulator's defect is followed by one more.
	if [ "$attempt" != 1 ] || [ $keep = 1 ] || grep -qx '# done' "$run/result.log" \
		|| ! bed_tcg_int3 "$console"; then
		break
	fi
	# shellcheck disable=SC2086 # one name per word
	left=$(bed_unreported "$run/result.txt" $selected | paste -sd, -)
	[ -n "$left" ] || break
	n_left=$(echo "$left" | tr , '\n' | wc -l)
	bed_tell_int3 "$console"
	log "booting once more for the $n_left case(s) left unreported"
	echo "# boot 2: boot 1 died of the guest kernel's 'Oops: int3' (an emulator defect, tests/vm/README.md); the $n_left case(s) it left run again" >>"$run/result.txt"
	boot_cases=$left
done
# The initrd is mostly the cached rootfs: no need to keep a copy per run.
[ $keep = 1 ] || rm -f "$initrd"

# --- report ------------------------------------------------------------------------
status=0
bed_report "$run/result.txt" "$console" "$rc" "$boot_s" || status=$?
log "qemu ran ${boot_s}ms, whole run $(elapsed); logs in $run"
exit "$status"
}
