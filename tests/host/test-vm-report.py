#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host test of the VM beds' verdict on a guest that died (tests/vm/bed.sh, report.awk):
which deaths are the emulator's `Oops: int3` (tried once more) and which fail the run,
which cases a dead boot left unreported, and what the report shows of a death and of a
second boot. The console lines are those of a real 6.12 boot under qemu 7.2's TCG.

usage: test-vm-report.py TESTS_VM_DIR
"""
import os
import subprocess
import sys

from privbus import tempdir

VM = sys.argv[1]

INT3_KERNEL = """\
[    4.449318] sched_clock: Marking stable (4416104567, 30626288)->(4480661548, -33930693)\r
[    4.458941] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI
[    4.459445] CPU: 0 UID: 0 PID: 1 Comm: swapper/0 Not tainted 6.12.118+deb12-amd64 #1  Debian 6.12.118-1~deb12u1
[    4.459605] Hardware name: QEMU Standard PC (i440FX + PIIX, 1996), BIOS 1.16.2-debian-1.16.2-1 04/01/2014
[    4.459715] RIP: 0010:sched_clock_cpu+0x9/0x190
[    4.461779]  psi_task_switch+0x4b/0x2a0
[    4.463081] Kernel panic - not syncing: Fatal exception in interrupt
"""
INT3_MODULE = INT3_KERNEL.replace("sched_clock_cpu+0x9/0x190",
                                  "fwh_cache_get+0x9/0x190 [fwh_cache]")
OTHER_PANIC = """\
[   19.084431] fwh-vmtest: starting 01-crash (boot 1)
[   19.244011] Kernel panic - not syncing: sysrq triggered crash
"""
HUNG = """\
[  100.000000] fwh-vmtest: starting 20-sleep-cycle (boot 1)
[  160.000000] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:
[  170.000000] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [systemd:1]
"""


def bash(script, *args):
    """Runs SCRIPT with bed.sh sourced; returns (status, stdout). bed.sh insists on a qemu
    in PATH: an empty script stands in for it."""
    d = tempdir("test-vm-report-bin-")
    qemu = os.path.join(d, "qemu-system-x86_64")
    with open(qemu, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(qemu, 0o755)
    env = dict(os.environ, PATH=d + ":" + os.environ["PATH"])
    p = subprocess.run(["bash", "-c", 'here=$1; repo=$1/../..; shift; . "$here/bed.sh"; '
                        + script, "bash", VM] + list(args),
                       env=env, stdout=subprocess.PIPE, text=True)
    return p.returncode, p.stdout


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def test_int3_rule(d):
    cases = {"int3-kernel": (INT3_KERNEL, 0), "int3-module": (INT3_MODULE, 1),
             "other-panic": (OTHER_PANIC, 1), "hung": (HUNG, 1)}
    for name, (text, want) in cases.items():
        rc, _ = bash('bed_tcg_int3 "$1"', write(d, name, text))
        assert rc == want, f"bed_tcg_int3 on {name}: {rc}, expected {want}"
    rc, _ = bash('accel=kvm; bed_tcg_int3 "$1"', write(d, "kvm", INT3_KERNEL))
    assert rc == 1, "an int3 under KVM is no emulator defect"
    rc, out = bash('set -euo pipefail; bed_tell_int3 "$1" 2>&1; bed_tell_int3 /dev/null 2>&1; echo end',
                   write(d, "tell", INT3_KERNEL))
    assert rc == 0 and "vm:   [    4.458941] Oops: int3" in out and out.endswith("end\n"), out


def test_unreported(d):
    result = write(d, "result", "1..4\nok 1 - 00-a\nnot ok 2 - 01-b\n# x\n"
                   "ok 3 - 10-c # SKIP why\n")
    rc, out = bash('bed_unreported "$@"', result, "00-a", "01-b", "10-c", "10-cd", "20-e")
    assert rc == 0 and out.split() == ["10-cd", "20-e"], out


def test_selected_cases(d):
    # The runner's choice, also when the last case in the directory is not chosen (the
    # run must go on under `set -e`).
    for name in ("00-a.sh", "10-b.sh", "90-bench-peers.sh", "90-bench-sleep.sh"):
        write(d, name, "")
    rc, out = bash('set -euo pipefail; cases=$2; s=$(bed_selected_cases "$1"); echo "$s"; echo end',
                   d, "90-bench-peers,0*")
    assert rc == 0 and out.split() == ["00-a", "90-bench-peers", "end"], (rc, out)


def report(d, result, console):
    p = subprocess.run(["awk", "-v", "console=" + write(d, "console", console),
                        "-v", "qemu_rc=0", "-v", "vm_ms=1", "-f",
                        os.path.join(VM, "report.awk"), write(d, "result", result)],
                       stdout=subprocess.PIPE, text=True)
    return p.returncode, p.stdout


def test_report_of_a_death(d):
    rc, out = report(d, "1..3\nok 1 - 10-a\n", HUNG)
    assert rc == 1, out
    assert "# last case started: [  100.000000] fwh-vmtest: starting 20-sleep-cycle" in out, out
    assert "# first kernel trouble: [  160.000000] rcu: INFO: rcu_preempt detected stalls" in out, out
    assert "# last kernel trouble: [  170.000000] watchdog: BUG: soft lockup" in out, out
    assert "vm: 1 passed, 2 failed" in out, out


def test_report_of_a_second_boot(d):
    # What run.sh makes of a first boot that died and a second that ran the rest.
    result = ("# kernel 6.12\n1..3\nok 1 - 10-a\n# time 10-a 1ms\n"
              "# boot 2: boot 1 died of the guest kernel's 'Oops: int3' (...); the 2 case(s) it left run again\n"
              "# kernel 6.12\n# boot 2: boot-to-runner 10s\nok 2 - 20-b\nnot ok 3 - 30-c\n"
              "# exit status 1\n# done\n")
    rc, out = report(d, result, "")
    assert rc == 1, out
    assert "# boot 2: boot 1 died of the guest kernel's 'Oops: int3'" in out, out
    assert "never reported done" not in out, out
    assert "vm: 2 passed, 1 failed" in out, out
    rc, out = report(d, result.replace("not ok 3", "ok 3"), "")
    assert rc == 0 and "vm: 3 passed, 0 failed" in out, out


def main():
    for test in (test_int3_rule, test_unreported, test_selected_cases, test_report_of_a_death,
                 test_report_of_a_second_boot):
        test(tempdir("test-vm-report-"))
        print("ok", test.__name__)


if __name__ == "__main__":
    main()
