#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/calls.sh [--kernel 6.1|6.12]
#
# What one system call costs in the guest (TCG), from a shell, in a unit with no
# sandbox and in a unit confined as fw-helperd.service is (its seccomp filters, its
# mount namespace): boots the VM test bed with bench/profile/93-calls.sh, which runs
# bench/calls.c there and prints the median ns per call of each kind (getppid,
# stat-miss, open-close). It tells what the daemon's calls cost in the bench: the
# sandbox's filters, or the kernel's work in each call.
#
#   FWH_VM_BUILDDIR   build dir (default build-bench)
set -euo pipefail

# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

extra_case calls 93-calls
vm_boot calls result.log 93-calls
sed -n 's/^# //p' "$run/result.log" | sed -n '/^seccomp filters:/p; /^where /,/^sandbox /p' | tee "$run/calls.txt"
echo "calls: report in ${run}calls.txt" >&2
exit "$rc"
