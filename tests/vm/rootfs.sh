#!/bin/sh
# SPDX-License-Identifier: MIT
#
# rootfs.sh: build the guest's root filesystem, a Debian minbase with systemd,
# packed as one compressed cpio that the kernel unpacks as its initramfs and
# keeps as / (no disk, so the guest needs no virtio-blk/9p modules).
#
# Packages come from the host's own apt sources, restricted to the entries of
# the host's release (others, e.g. vendor repositories, are unreachable or
# irrelevant in the guest). The result is cached in
# $FWH_CACHE/rootfs/<hash>/, the hash covering this script, rootfs.packages,
# those apt sources and the compression. Prints ROOTFS_CPIO=<path> and
# ROOTFS_DIRS=<path> (the image's directories: "path mode uid gid" lines).
#
# FWH_VM_COMPRESS=none|zstd|gzip picks the cpio compression. Default none:
# under TCG the kernel needs ~4 s to inflate a zstd or gzip image of this
# size and ~1.5 s to copy a plain one (README.md has the figures); disk is
# cheaper than boot time here.
set -eu

# Parse the whole script before running it: a checkout edited while a run is
# going (shells read scripts as they go) must not change that run.
{

here=$(cd "$(dirname "$0")" && pwd)
cache=${FWH_CACHE:-$HOME/.cache/fw-helperd}/rootfs
compress=${FWH_VM_COMPRESS:-none}

log() { echo "rootfs.sh: $*" >&2; }
die() { log "$*"; exit 1; }

. /etc/os-release
codename=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}

# The host's apt entries for $codename, $codename-updates, $codename-security,
# as one deb822 document (mmdebstrap pastes it into the guest's sources).
host_sources() {
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v c="$codename" '
			function flush() {
				if (keep && deb) printf "%s\n", stanza
				stanza = ""; keep = 0; deb = 0
			}
			/^#/ { next }
			/^[ \t]*$/ { flush(); next }
			{
				stanza = stanza $0 "\n"
				if ($1 == "Types:") for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1
				if ($1 == "Suites:") for (i = 2; i <= NF; i++)
					if ($i ~ "^" c "(-(updates|security))?$") keep = 1
				if ($1 == "Enabled:" && $2 == "no") { keep = 0; deb = 0 }
			}
			END { flush() }' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		# One-line style: "deb [opts] URI SUITE COMPONENT...".
		sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk -v c="$codename" '
			$1 == "deb" && $3 ~ "^" c "(-(updates|security))?$" {
				printf "Types: deb\nURIs: %s\nSuites: %s\nComponents:", $2, $3
				for (i = 4; i <= NF; i++) printf " %s", $i
				printf "\n\n"
			}'
	done
}

packages=$(sed -e 's/#.*//' "$here/rootfs.packages" | tr -s ' \n' '\n' | grep . | sort -u | paste -sd, -)
sources=$(host_sources)
[ -n "$sources" ] || die "no apt entries for $codename in /etc/apt/sources.list{,.d}"

hash=$( { cat "$0" "$here/rootfs.packages"; echo "$sources"; echo "$compress"; } | sha256sum | cut -c1-16)
dir=$cache/$hash
case "$compress" in
zstd) ext=cpio.zst; compressor="zstd -q -T0 -10" ;;
gzip) ext=cpio.gz; compressor="gzip -6" ;;
none) ext=cpio; compressor="cat" ;;
*) die "FWH_VM_COMPRESS must be zstd, gzip or none" ;;
esac
cpio_file=$dir/rootfs.$ext

if [ ! -f "$cpio_file" ]; then
	mkdir -p "$cache"
	exec 9>"$cache/.lock"
	flock 9
fi

if [ ! -f "$cpio_file" ]; then
	[ "$(id -u)" -eq 0 ] || die "building the rootfs needs root (mmdebstrap root mode keeps file owners)"
	# Leftovers of interrupted builds.
	find "$cache" -mindepth 1 -maxdepth 1 -name '*.tmp.*' -mtime +1 -exec rm -rf {} +
	tmp=$dir.tmp.$$
	root=$tmp/root
	rm -rf "$tmp"
	mkdir -p "$tmp"
	log "building rootfs $hash ($packages)"
	echo "$sources" | mmdebstrap --quiet --variant=minbase --include="$packages" \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-exclude=/usr/share/info/*' \
		"$codename" "$root" - >&2

	# The kernel leaves an initramfs root at mode 0700; dbus-daemon (as
	# messagebus) then cannot reach systemd's notify socket and the boot
	# stalls behind dbus and logind. Open it up before systemd starts.
	cat >"$root/init" <<-'EOF'
	#!/bin/sh
	chmod 0755 /
	exec /lib/systemd/systemd "$@"
	EOF
	chmod 0755 "$root/init"

	echo fwh-vm >"$root/etc/hostname"
	printf '127.0.0.1\tlocalhost\n127.0.1.1\tfwh-vm\n' >"$root/etc/hosts"
	# Every boot starts from this same image, so a fixed machine-id costs
	# nothing and keeps systemd out of first-boot mode (systemd-firstboot
	# would prompt on the console and stall the run).
	echo 5a1e5e0f1c0d4b6e9a7f3c2d1b0a9e8f >"$root/etc/machine-id"
	: >"$root/etc/fstab"

	# Journal: persistent, like a stock Debian host, so cases can exercise
	# the flush to /var and --relinquish-var. / is RAM anyway. No rate limit:
	# a case that looks for an entry must not lose it to a burst.
	mkdir -p "$root/etc/systemd/journald.conf.d" "$root/var/log/journal"
	cat >"$root/etc/systemd/journald.conf.d/fwh-vm.conf" <<-'EOF'
	[Journal]
	Storage=persistent
	RateLimitIntervalSec=0
	EOF

	# Nothing logs in: root stays locked, gettys are masked (the runner
	# reports on the second serial port). Timers and first-boot units only
	# cost boot time under TCG.
	for unit in getty@.service serial-getty@.service systemd-firstboot.service \
		apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer \
		e2scrub_all.timer e2scrub_reap.service fstrim.timer \
		systemd-timesyncd.service; do
		ln -sf /dev/null "$root/etc/systemd/system/$unit"
	done

	# An unprivileged user for D-Bus policy and fwctl permission cases.
	chroot "$root" useradd --create-home --uid 1000 --user-group --shell /bin/sh fwuser

	# apt's lists and downloads are dead weight in the guest's RAM.
	rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/*

	# Modes of the image's directories: a later cpio (the per-run payload)
	# that lists one of them must carry the same mode, or unpacking it
	# changes the directory (the kernel applies each entry's mode).
	(cd "$root" && find . -mindepth 1 -type d -printf '%P %m %U %G\n') >"$tmp/dirs.txt"

	log "packing $ext"
	(cd "$root" && find . -mindepth 1 | LC_ALL=C sort \
		| cpio --quiet -o -H newc) | $compressor >"$tmp/rootfs.$ext"
	du -sh "$root" "$tmp/rootfs.$ext" >&2
	rm -rf "$root"
	rm -rf "$dir"
	mv "$tmp" "$dir"
	# Images unused for two days only fill the disk. Not younger ones:
	# another checkout on this machine (other packages, other script) may
	# be booting one right now.
	find "$cache" -mindepth 1 -maxdepth 1 -type d -mtime +2 -exec rm -rf {} +
	log "cached in $dir"
fi

touch "$dir"                    # last use, for the pruning above
echo "ROOTFS_CPIO=$cpio_file"
echo "ROOTFS_DIRS=$dir/dirs.txt"
exit
}
