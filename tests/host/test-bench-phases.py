#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host test of bench/phases.py: a made-up trace of two requests, in the format
bench/profile/92-phases-requests.sh prints, with known phases.

usage: test-bench-phases.py PHASES_PY
"""
import subprocess
import sys
import tempfile

PHASES = sys.argv[1]
REQ, HELPER = "300", "200"


def line(pid, comm, ms, enter, nr):
    kind = "sys_enter" if enter else "sys_exit"
    rest = "(1, 2, 3, 4, 5, 6)" if enter else "= 0"
    return "# T fwhd %16s-%-6s [000] ..... %12.6f: %s: NR %d %s\n" % (comm, pid, ms / 1000, kind, nr, rest)


def request(t):
    """One request starting at t ms: deliver 1.0, recv 0.3, prep 1.2, io 0.5, back 0.4."""
    r = lambda ms, enter, nr: line(REQ, "bash", t + ms, enter, nr)
    h = lambda ms, enter, nr: line(HELPER, "fw-helperd", t + ms, enter, nr)
    return [
        r(0.0, True, 1),                          # the requester's write to trigger_request
        h(1.0, False, 232),                       # epoll_wait returns: woken
        h(1.05, True, 228), h(1.06, False, 228),  # clock_gettime
        h(1.1, True, 47), h(1.2, False, 47),      # recvmsg: the event
        h(1.3, True, 262), h(1.5, False, 262),    # the first call beyond the event
        h(2.2, True, 1), h(2.3, False, 1),        # "1"
        h(2.4, True, 40), h(2.6, False, 40),      # sendfile
        h(2.65, True, 1), h(2.7, False, 1),       # "0"
        r(3.1, False, 1),                         # the driver returns
        h(3.2, True, 46), h(3.3, False, 46),      # after: the journal
    ]


def main():
    text = "# === trace fwhd req=%s helper=%s\n" % (REQ, HELPER)
    text += "".join(request(10.0) + request(20.0))
    text += "# unrelated line\n"
    with tempfile.NamedTemporaryFile("w", suffix=".log") as f:
        f.write(text)
        f.flush()
        out = subprocess.run([sys.executable, PHASES, f.name], check=True,
                             capture_output=True, text=True).stdout
    print(out, end="")
    rows = {l.split()[0]: l.split()[1:] for l in out.splitlines()[1:]}
    want = ["2", "3.100", "1.000", "0.300", "1.200", "0.500", "0.400", "6.000", "1.000"]
    if rows.get("fwhd") != want:
        print("FAIL: fwhd phases %s, want %s" % (rows.get("fwhd"), want))
        return 1
    print("ok: two requests split into their phases")
    return 0


sys.exit(main())
