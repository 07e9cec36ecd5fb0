# SPDX-License-Identifier: MIT
# shellcheck shell=sh
#
# Sourced by rootfs.sh (the fast bed's initramfs root) and disk.sh (the disk
# bed's ext4 root): where packages come from, how the image is kept lean, and
# the adjustments that make a Debian root a quiet, repeatable test guest.
# Both hash this file into their cache keys.

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

# package_list FILE...: the packages named in FILEs (comments, blank lines
# dropped), comma-separated for mmdebstrap --include.
package_list() {
	sed -e 's/#.*//' "$@" | tr -s ' \n' '\n' | grep . | sort -u | paste -sd, -
}

# image_mmdebstrap ROOT PACKAGES [MMDEBSTRAP_OPTION...]: a minbase root in
# ROOT with PACKAGES (comma-separated), from the host's apt entries on stdin;
# no manuals, docs (but copyrights), locales or info pages.
image_mmdebstrap() {
	_root=$1 _packages=$2
	shift 2
	mmdebstrap --quiet --variant=minbase --include="$_packages" \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-exclude=/usr/share/info/*' \
		"$@" "$codename" "$_root" - >&2
}

# image_tune ROOT: hostname, fixed machine-id, persistent journal without
# rate limit, gettys and timers masked, user fwuser (uid 1000), no apt
# lists. /etc/fstab is the caller's.
image_tune() {
	echo fwh-vm >"$1/etc/hostname"
	printf '127.0.0.1\tlocalhost\n127.0.1.1\tfwh-vm\n' >"$1/etc/hosts"
	# Every boot starts from this same image, so a fixed machine-id costs
	# nothing and keeps systemd out of first-boot mode (systemd-firstboot
	# would prompt on the console and stall the run).
	echo 5a1e5e0f1c0d4b6e9a7f3c2d1b0a9e8f >"$1/etc/machine-id"

	# Journal: persistent, like a stock Debian host, so cases can exercise
	# the flush to /var and --relinquish-var. No rate limit: a case that
	# looks for an entry must not lose it to a burst.
	mkdir -p "$1/etc/systemd/journald.conf.d" "$1/var/log/journal"
	cat >"$1/etc/systemd/journald.conf.d/fwh-vm.conf" <<-'EOF2'
	[Journal]
	Storage=persistent
	RateLimitIntervalSec=0
	EOF2

	# Nothing logs in: root stays locked, gettys are masked (the runner
	# reports on the second serial port). Timers and first-boot units only
	# cost boot time under TCG.
	for _unit in getty@.service serial-getty@.service systemd-firstboot.service \
		apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer \
		e2scrub_all.timer e2scrub_reap.service fstrim.timer \
		systemd-timesyncd.service; do
		ln -sf /dev/null "$1/etc/systemd/system/$_unit"
	done

	# An unprivileged user for D-Bus policy and fwctl permission cases.
	chroot "$1" useradd --create-home --uid 1000 --user-group --shell /bin/sh fwuser

	# apt's lists and downloads are dead weight in the guest.
	rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*
}
