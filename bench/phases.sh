#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/phases.sh [--kernel 6.1|6.12]
#
# Where a small request's time goes, fw-helperd beside the floor (bench/floor.c),
# both in the minimal state (udevd stopped, fw-helperd on EventSource=kernel):
# boots the VM test bed with bench/profile/92-phases-requests.sh, which traces
# the system calls of the requester and of the helper (the kernel's
# raw_syscalls events, one clock for both) over N requests of 4 KiB and N of a
# missing name, and splits each request into phases (medians, ms):
#   deliver  the requester's write until the helper's wait returns
#   recv     until the helper's first call beyond reading the event (and the
#            clock: under TCG the guest reads it through a system call)
#   prep     from the wake until its first write to `loading` ("1", or "-1")
#   io       from there until its last write ("0") returned
#   back     from there until the requester's write returned
# and counts the helper's calls during the request and after it. Tracing adds to
# every call, so the phases are for comparing, not absolute.
#
#   FWH_VM_BUILDDIR   build dir (default build-bench)
set -euo pipefail

# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

extra_case floor 92-phases-requests
vm_boot phases result.log 92-phases-requests
python3 "$here/phases.py" "$run/result.log" | tee "$run/phases.txt"
echo "phases: report in ${run}phases.txt" >&2
exit "$rc"
