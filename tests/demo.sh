#!/bin/bash
# SPDX-License-Identifier: MIT
# The main job on an embedded default, touching nothing on this machine: builds the Debian
# packages, boots an installed Debian 12 with Debian's stock kernel from a virtual disk (the
# disk bed, tests/vm/README.md), and tells step by step what happens there: the package
# installed with dpkg, a real driver (e100 on qemu's Intel 82559ER) getting Debian's own
# firmware image from a root only fw-helperd searches, fwctl status, the journal entries,
# and a suspend cycle whose prewarm answers a request from memory.
#
#   tests/demo.sh [--kernel 6.12]     (6.1 by default)
#
# The first run builds and caches the disk image (minutes); later runs take a few minutes.
# The guest's console is in the run directory printed at the start (console.log).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/tests/setup-deps.sh"
FWH_VM_EXTRA_CASES="$top/tests/vm/demo" exec "$top/tests/vm/run-disk.sh" --cases demo --narrate "$@"
