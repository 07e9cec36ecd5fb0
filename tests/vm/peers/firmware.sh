#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The classic firmware helper that distributions ran from a udev RUN+= rule
# before the kernel loaded firmware itself (udev's firmware.sh, roughly):
# answer one fallback request from the environment udev passes (DEVPATH,
# FIRMWARE). A peer for comparisons: it is what fw-helperd replaces.
#
#   SUBSYSTEM=="firmware", ACTION=="add", RUN+="/usr/lib/fwh-vmtest/peers/firmware.sh"
#
# Serves files under FWH_PEER_FW_DIR (default /srv/firmware) only.
dir=${FWH_PEER_FW_DIR:-/srv/firmware}
sys=/sys$DEVPATH

err() {
	echo "$*" >&2
	logger -t firmware.sh "$*" 2>/dev/null || true
}

if [ ! -e "$sys/loading" ]; then
	err "no fallback request at $sys"
	exit 1
fi

if [ -n "$FIRMWARE" ] && [ -f "$dir/$FIRMWARE" ]; then
	echo 1 >"$sys/loading"
	if cat "$dir/$FIRMWARE" >"$sys/data"; then
		echo 0 >"$sys/loading"
		exit 0
	fi
	err "writing '$FIRMWARE' failed"
fi

echo -1 >"$sys/loading"
err "cannot find firmware file '$FIRMWARE'"
exit 1
