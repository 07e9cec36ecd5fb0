#!/bin/bash
# SPDX-License-Identifier: MIT
# The main job on an embedded default, touching nothing on this machine: boots Debian's
# stock kernel in a VM with fw-helperd installed, has a real driver (test_firmware)
# request firmware that only fw-helperd can find, and shows what it did.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/tests/setup-deps.sh"
exec "$top/tests/vm/run.sh" --demo "$@"
