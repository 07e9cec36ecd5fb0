#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host test of bench/calls.c: it prints a mean per call for each kind and the seccomp
filters it ran under, and refuses a count that is not positive.

usage: test-calls.py CALLS
"""
import re
import subprocess
import sys

CALLS = sys.argv[1]

out = subprocess.run([CALLS, "100"], capture_output=True, text=True, check=True).stdout
m = re.fullmatch(r"getppid (\d+) stat-miss (\d+) open-close (\d+) filters (-?\d+)\n", out)
if not m:
    sys.exit(f"FAIL: unexpected output {out!r}")
print(f"ok - calls printed {out.strip()}")

bad = subprocess.run([CALLS, "0"], capture_output=True, text=True)
if bad.returncode != 2 or "usage" not in bad.stderr:
    sys.exit(f"FAIL: a count of 0 gave {bad.returncode}, {bad.stderr!r}")
print("ok - a count of 0 is refused with 2")
