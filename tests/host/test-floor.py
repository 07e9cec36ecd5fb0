#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host test of the bench's floor peer (bench/floor.c): uevents sent to the kernel's
multicast group stand in for the kernel's, and a DEVPATH that climbs out of /sys points
the program at a fixture directory whose `loading` and `data` are regular files.

usage: test-floor.py FLOOR
Runs in a network namespace of its own (unshare -n): a udevd or fw-helperd on the host,
listening to the same group, must not see these events. Without the privilege for that and
for sending to the group (CAP_SYS_ADMIN, CAP_NET_ADMIN) the test is skipped (77).
"""
import os
import socket
import subprocess
import sys
import time

from privbus import tempdir

FLOOR = sys.argv[1]
NETLINK_KOBJECT_UEVENT = 15


def request(top, name):
    d = os.path.join(top, "req-" + name)
    os.makedirs(d)
    for f in ("loading", "data"):
        open(os.path.join(d, f), "w").close()
    return d


def send(sock, devpath, firmware, action="add", subsystem="firmware"):
    msg = "%s@%s\0ACTION=%s\0DEVPATH=%s\0SUBSYSTEM=%s\0FIRMWARE=%s\0SEQNUM=1\0" % (
        action, devpath, action, devpath, subsystem, firmware)
    sock.sendto(msg.encode(), (0, 1))


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def in_own_netns():
    """Run this script again in a fresh network namespace; its exit status, or 77."""
    env = dict(os.environ, FWH_FLOOR_NETNS="1")
    r = subprocess.run(["unshare", "-n", sys.executable, os.path.abspath(__file__), FLOOR], env=env)
    if r.returncode not in (0, 1, 77):
        print("SKIP: cannot make a network namespace (unshare -n exited %d)" % r.returncode)
        return 77
    return r.returncode


def main():
    if os.environ.get("FWH_FLOOR_NETNS") != "1":
        return in_own_netns()
    top = tempdir("fwh-floor-")
    fw = os.path.join(top, "fw")
    os.makedirs(os.path.join(fw, "vendor"))
    blob = bytes((i * 13 + 5) % 251 for i in range(300001))
    with open(os.path.join(fw, "vendor/a.bin"), "wb") as f:
        f.write(blob)
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_KOBJECT_UEVENT)
    sock.bind((0, 0))
    try:
        send(sock, "/nonexistent", "probe")
    except PermissionError:
        print("SKIP: sending uevents needs CAP_NET_ADMIN")
        return 77

    served, missing = request(top, "served"), request(top, "missing")
    other, removed = request(top, "other"), request(top, "removed")
    # /sys + DEVPATH is the request's directory
    dev = lambda d: "/.." + d
    proc = subprocess.Popen([FLOOR, os.path.join(top, "empty"), fw])
    try:
        time.sleep(0.5)
        send(sock, dev(other), "vendor/a.bin", subsystem="block")
        send(sock, dev(removed), "vendor/a.bin", action="remove")
        send(sock, dev(served), "vendor/a.bin")
        send(sock, dev(missing), "nothere.bin")
        end = time.monotonic() + 10
        while time.monotonic() < end and not read(os.path.join(missing, "loading")):
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    results = [
        ("served: committed with 0", read(os.path.join(served, "loading")) == "0"),
        ("served: data byte-exact from the second directory",
         read(os.path.join(served, "data"), "rb") == blob),
        ("missing: answered -1", read(os.path.join(missing, "loading")) == "-1"),
        ("another subsystem's event left alone", read(os.path.join(other, "loading")) == ""),
        ("a remove event left alone", read(os.path.join(removed, "loading")) == ""),
    ]
    for name, ok in results:
        print(("ok   " if ok else "FAIL ") + name)
    return 0 if all(ok for _, ok in results) else 1


if __name__ == "__main__":
    sys.exit(main())
