#!/bin/sh
# Installs every Debian 12 package that building fw-helperd, its module and its Debian
# packages and running every test (unit, host integration, VM) needs. Idempotent; run
# as root.
set -eu

packages="
  meson ninja-build pkg-config gcc make scdoc
  libudev-dev libsystemd-dev liblzma-dev libzstd-dev libinih-dev libkmod-dev nettle-dev
  clang libclang-rt-14-dev
  dbus python3 python3-dbus python3-dbusmock python3-gi
  xz-utils zstd cpio kmod dwarves
  qemu-system-x86 mmdebstrap debian-archive-keyring
  qemu-utils e2fsprogs
  git dpkg-dev debhelper dh-dkms lintian
"

missing=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' $packages 2>/dev/null \
	  | awk '$2 != "installed" { print $1 }')
# dpkg-query prints nothing for packages it has never heard of: add those too.
for p in $packages; do
	dpkg-query -W "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$(echo $missing)" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "setup-deps: missing packages: $missing; run as root to install them" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing
