#!/bin/sh
# SPDX-License-Identifier: MIT
# Early-boot setup of the payload, before anything that uses it starts:
# - modules built from module/ go into the running kernel's tree under
#   updates/ and depmod runs, so modprobe and libkmod find them by name;
# - journal catalog entries the build installed are merged into the
#   catalog database, so `journalctl -x` shows them.
set -eu
vmtest=/usr/lib/fwh-vmtest
if ls "$vmtest"/modules/*.ko >/dev/null 2>&1; then
	dst=/lib/modules/$(uname -r)/updates/fwh-vmtest
	mkdir -p "$dst"
	cp "$vmtest"/modules/*.ko "$dst/"
	depmod -a
fi
if [ -e "$vmtest/update-catalog" ]; then
	journalctl --update-catalog
fi
