#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench/phases.py RESULT_LOG: the phases of each request from the raw_syscalls trace
that bench/profile/92-phases-requests.sh printed (see bench/phases.sh); medians in ms."""
import re
import statistics
import sys

# x86-64 system call numbers the phases are told by
WRITE = 1
READING_THE_EVENT = {228, 45, 47, 318}  # clock_gettime, recvfrom, recvmsg, getrandom

LINE = re.compile(r'^(?:# )?T (\S+)\s+.+?-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): '
                  r'(sys_enter|sys_exit): NR (-?\d+)')
HEAD = re.compile(r'^(?:# )?=== trace (\S+) req=(\d+) helper=(\d+)')
PHASES = ('total', 'deliver', 'recv', 'prep', 'io', 'back', 'calls_in', 'calls_after')


def read(path):
    runs, requester = {}, {}
    for line in open(path, errors='replace'):
        m = HEAD.match(line)
        if m:
            requester[m.group(1)] = m.group(2)
            continue
        m = LINE.match(line)
        if m:
            run, pid, ts, kind, nr = m.groups()
            runs.setdefault(run, []).append((float(ts) * 1e3, pid, kind == 'sys_enter', int(nr)))
    return runs, requester


def windows(events, req):
    """(start, end) of each request: the requester's write to trigger_request."""
    out, start = [], None
    for t, pid, enter, nr in events:
        if pid == req and nr == WRITE:
            if enter:
                start = t
            elif start is not None:
                out.append((start, t))
                start = None
    return out


def phases(events, req):
    ph = {k: [] for k in PHASES}
    wins = windows(events, req)
    for i, (a, b) in enumerate(wins):
        nxt = wins[i + 1][0] if i + 1 < len(wins) else float('inf')
        helper = [e for e in events if e[1] != req and a <= e[0] <= b]
        wake = next((e[0] for e in helper if not e[2]), None)
        writes = [e[0] for e in helper if e[3] == WRITE and e[2]]
        written = [e[0] for e in helper if e[3] == WRITE and not e[2]]
        if wake is None or not writes or not written:
            continue
        other = next((e[0] for e in helper if e[2] and e[0] > wake and e[3] not in READING_THE_EVENT), None)
        if other is not None:
            ph['recv'].append(other - wake)
        ph['total'].append(b - a)
        ph['deliver'].append(wake - a)
        ph['prep'].append(writes[0] - wake)
        ph['io'].append(written[-1] - writes[0])
        ph['back'].append(b - written[-1])
        ph['calls_in'].append(sum(1 for e in helper if e[2]))
        ph['calls_after'].append(sum(1 for e in events if e[1] != req and b < e[0] < nxt and e[2]))
    return ph


def main():
    runs, requester = read(sys.argv[1])
    print(f"{'run':<12} {'n':>3} " + " ".join(f"{k:>11}" for k in PHASES))
    for run, events in runs.items():
        ph = phases(events, requester[run])
        print(f"{run:<12} {len(ph['total']):>3} " +
              " ".join(f"{statistics.median(v):>11.3f}" if v else f"{'-':>11}" for v in ph.values()))


main()
