#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Host test for fwctl: a fake org.fwhelperd1 on a private bus, fwctl pointed at it through
$DBUS_SYSTEM_BUS_ADDRESS. Checks the output for people and programs and every exit status.

usage: test-fwctl.py FWCTL
       test-fwctl.py --serve ADDRESS MODE     (the fake daemon; run by the test itself)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from privbus import wait_accepting

NAME, PATH, IFACE = "org.fwhelperd1", "/org/fwhelperd1", "org.fwhelperd1.Manager"

# What the fake reports; 5 MiB + 1 KiB so the human size is not a round number.
PROPS = {
    "Version": ("s", "9.8.7"),
    "State": ("s", "running"),
    "EventSource": ("s", "udev"),
    "Served": ("t", 7),
    "Failed": ("t", 2),
    "Missing": ("t", 3),
    "Rejected": ("t", 1),
    "BytesServed": ("t", 5 * 1024 * 1024 + 1024),
    "InFlight": ("u", 4),
    "SearchPath": ("as", ["/lib/firmware/updates", "/lib/firmware", "/srv/fw"]),
    "MissingFirmware": ("as", ["new/missing.bin", "bad\x01name.bin", "old.bin"]),
    "SomethingNewer": ("b", True),  # a property this fwctl does not know must be skipped
}
DESCRIBE = {"version": "9.8.7", "state": "running", "event_source": "udev",
            "counters": {"served": 7, "failed": 2, "missing": 3, "rejected": 1,
                         "bytes_served": 5 * 1024 * 1024 + 1024, "in_flight": 4},
            "search_path": ["/lib/firmware/updates", "/lib/firmware", "/srv/fw"],
            "missing_firmware": [{"name": "new/missing.bin", "count": 1}]}

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={top}/bus</listen>
  <auth>EXTERNAL</auth>
  <servicedir>{top}/services</servicedir>
  <policy context="default">
    <allow user="*"/><allow own="*"/><allow send_destination="*"/><allow receive_sender="*"/>
  </policy>
</busconfig>
"""

# If fwctl let the bus activate the name, this would run and leave a mark.
ACTIVATION = """[D-BUS Service]
Name=org.fwhelperd1
Exec={top}/activate.sh
"""


def serve(address, mode):
    import dbus
    import dbus.service
    from dbus.mainloop.glib import DBusGMainLoop
    from gi.repository import GLib

    class Error(dbus.DBusException):
        def __init__(self, name, text):
            super().__init__(text)
            self._dbus_error_name = name

    def variant(sig, value):
        if sig == "s":
            return dbus.String(value)
        if sig == "t":
            return dbus.UInt64(value)
        if sig == "u":
            return dbus.UInt32(value)
        if sig == "b":
            return dbus.Boolean(value)
        return dbus.Array(value, signature="s")

    class Manager(dbus.service.Object):
        @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="s", out_signature="a{sv}")
        def GetAll(self, interface):
            if interface != IFACE:
                raise Error("org.freedesktop.DBus.Error.UnknownInterface", interface)
            return dbus.Dictionary({k: variant(*v) for k, v in PROPS.items()}, signature="sv")

        @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="ss", out_signature="v")
        def Get(self, interface, prop):
            return variant(*PROPS[prop])

        @dbus.service.method(IFACE, in_signature="", out_signature="s")
        def Describe(self):
            return json.dumps(DESCRIBE)

        @dbus.service.method(IFACE, in_signature="", out_signature="")
        def Reload(self):
            if mode == "normal":
                raise Error("org.freedesktop.DBus.Error.AccessDenied",
                            "Only root may change fw-helperd's state.")
            raise Error("org.freedesktop.DBus.Error.InvalidArgs",
                        "Configuration is invalid, previous one kept (see the journal).")

        @dbus.service.method(IFACE, in_signature="", out_signature="u")
        def Rescan(self):
            if mode == "normal":
                return dbus.UInt32(3)
            raise Error("System.Error.EPERM", "Operation not permitted")

    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(address)
    Manager(bus, PATH)
    bus.request_name(NAME, dbus.bus.NAME_FLAG_DO_NOT_QUEUE)
    print("ready", flush=True)
    GLib.MainLoop().run()


results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + detail), flush=True)


def wait_for(pred, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def one_line(text):
    return text.count("\n") == 1 and text.strip() != ""


def field(stdout, key):
    """The value lines of `key` in the status table: its own line plus continuation lines."""
    lines = stdout.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^ *%s: (.*)$" % re.escape(key), line)
        if m:
            values = [m.group(1)]
            for cont in lines[i + 1:]:
                c = re.match(r"^ {%d}(\S.*)$" % (m.start(1)), cont)
                if not c:
                    break
                values.append(c.group(1))
            return values
    return None


class Fake:
    def __init__(self, address, mode):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve",
                                      address, mode], stdout=subprocess.PIPE, text=True)
        self.ready = self.proc.stdout.readline().strip() == "ready"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def main(fwctl):
    top = tempfile.mkdtemp(prefix="fwctl-host-")
    os.makedirs(os.path.join(top, "services"))
    with open(os.path.join(top, "bus.conf"), "w") as f:
        f.write(BUS_CONFIG.format(top=top))
    with open(os.path.join(top, "services", NAME + ".service"), "w") as f:
        f.write(ACTIVATION.format(top=top))
    with open(os.path.join(top, "activate.sh"), "w") as f:
        f.write("#!/bin/sh\ntouch %s/activated\nsleep 5\n" % top)
    os.chmod(os.path.join(top, "activate.sh"), 0o755)

    bus_log = open(os.path.join(top, "bus.log"), "w+")
    bus = subprocess.Popen(["dbus-daemon", "--config-file=" + os.path.join(top, "bus.conf"),
                            "--nofork", "--nopidfile"], stderr=bus_log)
    address = "unix:path=" + os.path.join(top, "bus")
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address, LC_ALL="C")
    env.pop("JOURNAL_STREAM", None)

    def run(*args, environ=env):
        return subprocess.run([fwctl, *args], env=environ, capture_output=True, text=True,
                              timeout=30)

    fake = None
    try:
        check("private bus up", wait_accepting(os.path.join(top, "bus")))

        r = run("--help")
        check("--help: exit 0, Commands:/Options:/verbs/exit codes", r.returncode == 0
              and "Commands:" in r.stdout and "Options:" in r.stdout
              and all(v in r.stdout for v in ("status", "reload", "rescan", "--json"))
              and "3  fw-helperd is not running" in r.stdout and r.stderr == "", repr(r))
        r = run("--version")
        check("--version: exit 0, name and version", r.returncode == 0
              and re.fullmatch(r"fwctl \d+\.\d+\S*\n", r.stdout), repr(r))

        for args in (["frobnicate"], ["--frobnicate"], ["status", "extra"], ["-x", "status"]):
            r = run(*args)
            check("usage error %s: exit 2, one line on stderr" % " ".join(args),
                  r.returncode == 2 and one_line(r.stderr) and r.stdout == "", repr(r))

        r = run("status", environ=dict(env, DBUS_SYSTEM_BUS_ADDRESS="unix:path=" + top + "/nobus"))
        check("no bus at all: exit 1, says so", r.returncode == 1 and one_line(r.stderr)
              and "system bus" in r.stderr, repr(r))

        for args in (["status"], ["status", "--json"], ["rescan"], ["reload"]):
            r = run(*args)
            check("name not owned, %s: exit 3, 'fw-helperd is not running'" % " ".join(args),
                  r.returncode == 3 and one_line(r.stderr)
                  and "fw-helperd is not running" in r.stderr and r.stdout == "", repr(r))
        time.sleep(0.2)
        check("fwctl does not D-Bus-activate a stopped daemon",
              not os.path.exists(os.path.join(top, "activated")))

        fake = Fake(address, "normal")
        check("fake daemon owns " + NAME, fake.ready)

        r = run()
        out = r.stdout
        check("no verb means status: exit 0, nothing on stderr", r.returncode == 0 and r.stderr == "",
              repr(r))
        expect = {"Version": ["9.8.7"], "State": ["running"], "Event source": ["udev"],
                  "Served": ["7"], "Failed": ["2"], "Missing": ["3"], "Rejected": ["1"],
                  "Bytes served": ["5243904 (5.0M)"], "In flight": ["4"],
                  "Search path": ["/lib/firmware/updates", "/lib/firmware", "/srv/fw"],
                  "Missing firmware": ["new/missing.bin", "bad\\x01name.bin", "old.bin"]}
        for key, values in expect.items():
            check("status table: %s = %s" % (key, values), field(out, key) == values,
                  repr(field(out, key)) + "\n" + out)
        check("status table: keys right-aligned on one column",
              len({line.index(": ") for line in out.splitlines() if ": " in line}) == 1, out)
        check("status table: no raw control bytes", "\x01" not in out, repr(out))

        r = run("status", "--json")
        try:
            parsed = json.loads(r.stdout)
        except ValueError:
            parsed = None
        check("status --json: exit 0, Describe() as-is plus newline", r.returncode == 0
              and parsed == DESCRIBE and r.stdout == json.dumps(DESCRIBE) + "\n", repr(r))
        r = run("--json")
        check("--json before the (default) verb", r.returncode == 0
              and json.loads(r.stdout or "null") == DESCRIBE, repr(r))

        r = run("rescan")
        check("rescan: exit 0, reports the count", r.returncode == 0
              and r.stdout == "Found 3 pending firmware requests.\n", repr(r))
        r = run("rescan", "--json")
        check("rescan --json", r.returncode == 0 and json.loads(r.stdout or "null") == {"found": 3},
              repr(r))

        r = run("reload")
        check("reload refused with AccessDenied: exit 4, 'permission denied'", r.returncode == 4
              and one_line(r.stderr) and "permission denied" in r.stderr, repr(r))

        fake.stop()
        check("daemon gone again: exit 3",
              wait_for(lambda: run("status").returncode == 3), repr(run("status")))

        fake = Fake(address, "failing")
        check("failing fake daemon owns " + NAME, fake.ready)
        r = run("reload")
        check("reload fails (InvalidArgs): exit 1, daemon's message on one line",
              r.returncode == 1 and one_line(r.stderr)
              and "Configuration is invalid, previous one kept" in r.stderr, repr(r))
        r = run("rescan")
        check("rescan refused with EPERM: exit 4, 'permission denied'", r.returncode == 4
              and one_line(r.stderr) and "permission denied" in r.stderr, repr(r))
    finally:
        if fake:
            fake.stop()
        bus.terminate()
        bus.wait()
        if not all(results):
            bus_log.seek(0)
            print("--- dbus-daemon log ---\n" + bus_log.read())
        bus_log.close()
        shutil.rmtree(top)

    print("%d passed, %d failed" % (results.count(True), results.count(False)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        serve(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 2:
        sys.exit(main(sys.argv[1]))
    else:
        sys.exit(__doc__)
