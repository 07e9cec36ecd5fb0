#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host integration test: the real fw-helperd and fwctl on a private D-Bus, answering
requests in a fixture sysfs tree (regular files stand in for `loading` and `data`).

usage: test-daemon.py FW_HELPERD FWCTL
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

from privbus import require, start_system_bus, tempdir

FW_HELPERD, FWCTL = sys.argv[1], sys.argv[2]
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + detail), flush=True)


class Fixture:
    def __init__(self):
        self.top = tempdir("fwh-host-")
        self.sys = os.path.join(self.top, "sys")
        self.fw = os.path.join(self.top, "srv-firmware")
        self.conf = os.path.join(self.top, "fw-helperd.conf")
        os.makedirs(os.path.join(self.sys, "class/firmware"))
        os.makedirs(os.path.join(self.sys, "module/firmware_class/parameters"))
        os.makedirs(self.fw)
        self.write(os.path.join(self.sys, "class/firmware/timeout"), "60\n")
        self.write(os.path.join(self.sys, "module/firmware_class/parameters/path"), "\n")
        self.write_config("[Firmware]\nSearchPath=%s\n" % self.fw)

    @staticmethod
    def write(path, text, mode="w"):
        with open(path, mode) as f:
            f.write(text)

    def write_config(self, text):
        self.write(self.conf, text)

    def request(self, name):
        """A pending request as the kernel lays it out: class/firmware/<name with ! for />."""
        kobj = name.replace("/", "!")
        dev = os.path.join(self.sys, "devices/virtual/misc/testdev/firmware", kobj)
        os.makedirs(dev)
        self.write(os.path.join(dev, "loading"), "")
        self.write(os.path.join(dev, "data"), "")
        # names are bytes: str with surrogate escapes stands for those that are not UTF-8
        self.write(os.path.join(dev, "uevent"),
                   ("FIRMWARE=%s\nTIMEOUT=60\n" % name).encode("utf-8", "surrogateescape"), "wb")
        os.symlink(dev, os.path.join(self.sys, "class/firmware", kobj))
        return dev

    def finish(self, dev):
        """The kernel removes the directory once the request is answered. Moved aside, not
        deleted: sysfs never gives a later directory the inode number of an earlier one,
        and the daemon relies on that; a file system here would."""
        os.unlink(os.path.join(self.sys, "class/firmware", os.path.basename(dev)))
        os.makedirs(os.path.join(self.top, "answered"), exist_ok=True)
        os.rename(dev, os.path.join(self.top, "answered", str(len(os.listdir(
            os.path.join(self.top, "answered"))))))


# REQUEST_INLINE_MAX in src/fw-helperd/fw-helperd-request.h
INLINE_MAX = 256 * 1024
# CHANGED_DELAY_USEC and TELL_INTERVAL_USEC in src/fw-helperd/fw-helperd-manager.c, in seconds
CHANGED_DELAY = 0.1
TELL_INTERVAL = 1.0


def answered_where(fx, name):
    """Where the daemon's debug lines say it answered name, each time in order: "loop"
    (manager_dispatch() answered it itself) or "worker" (it handed it to the pool)."""
    with open(os.path.join(fx.top, "daemon.log"), errors="surrogateescape") as f:
        lines = f.read().splitlines()
    asked = ("Answered firmware request %s for " % name, "Answering firmware request %s for " % name)
    return ["loop" if " on the loop" in line else "worker" if " on a worker" in line else "?"
            for line in lines if any(a in line for a in asked)]


def wait_for(pred, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    return pred()


def loading_of(dev):
    """The last value written to `loading`. sysfs ignores the file offset; a regular file
    does not, so "1" then "0" through one descriptor reads back as "10"."""
    with open(os.path.join(dev, "loading")) as f:
        text = f.read()
    return "-1" if text.endswith("-1") else text[-1:]


def data_of(dev):
    with open(os.path.join(dev, "data"), "rb") as f:
        return f.read()


# Not UTF-8 (0xfe 0xff) and a noncharacter (U+FFFE), which sd-bus refuses as well: both shown
# as \xNN on D-Bus, in JSON (the same text) and by fwctl, whose table escapes non-ASCII anyway.
ODD_MISSING = "gone-\udcfe\udcff-\ufffe.bin"
ODD_MISSING_SHOWN = r"gone-\xfe\xff-\xef\xbf\xbe.bin"
ODD_SERVED = "vendor/fw-\udcff.bin"
ODD_SERVED_SHOWN = r"vendor/fw-\xff.bin"


def check_odd_names(fwctl, when, missing=True):
    """fwctl status, status --json and list, which failed with "Invalid argument" once the
    daemon had seen one such name (sd-bus refuses strings that are not UTF-8)."""
    r = fwctl("status")
    check("%s: status shows the odd names escaped" % when, r.returncode == 0 and
          (not missing or ODD_MISSING_SHOWN in r.stdout), r.stdout + r.stderr)
    r = fwctl("status", "--json")
    try:
        names = [e.get("name") for e in json.loads(r.stdout).get("missing_firmware", [])]
    except ValueError:
        names = None
    check("%s: status --json is valid JSON" % when, r.returncode == 0 and names is not None and
          (not missing or ODD_MISSING_SHOWN in names), r.stdout + r.stderr)
    r = fwctl("list")
    check("%s: list shows the served odd name" % when, r.returncode == 0 and
          any(line.startswith(ODD_SERVED_SHOWN + " ") for line in r.stdout.splitlines()),
          r.stdout + r.stderr)
    r = fwctl("list", "--json")
    try:
        names = [e.get("name") for e in json.loads(r.stdout)]
    except ValueError:
        names = None
    check("%s: list --json is valid JSON" % when, r.returncode == 0 and names is not None
          and ODD_SERVED_SHOWN in names, r.stdout + r.stderr)


class PropertiesWatch:
    """What the daemon claims in its introspection data about PropertiesChanged, and what it
    sends: sd-bus writes EmitsChangedSignal=false, =invalidates or =const, nothing for true."""

    def __init__(self, address):
        import dbus
        from dbus.mainloop.glib import DBusGMainLoop
        DBusGMainLoop(set_as_default=True)
        self.conn = dbus.bus.BusConnection(address)
        self.changed, self.invalidated = set(), set()
        self.conn.add_signal_receiver(self.on_changed, "PropertiesChanged",
                                      "org.freedesktop.DBus.Properties", path="/org/fwhelperd1")

    def on_changed(self, interface, changed, invalidated):
        self.changed |= {str(k) for k in changed}
        self.invalidated |= {str(k) for k in invalidated}

    def claims(self):
        obj = self.conn.get_object("org.fwhelperd1", "/org/fwhelperd1", introspect=False)
        xml = obj.Introspect(dbus_interface="org.freedesktop.DBus.Introspectable")
        iface = ET.fromstring(str(xml)).find("interface[@name='org.fwhelperd1.Manager']")
        claims = {}
        for prop in iface.findall("property"):
            a = prop.find("annotation[@name='org.freedesktop.DBus.Property.EmitsChangedSignal']")
            claims[prop.get("name")] = "true" if a is None else a.get("value")
        return claims

    def wait_signal(self, timeout=5):
        from gi.repository import GLib
        ctx = GLib.MainContext.default()
        end = time.monotonic() + timeout
        while time.monotonic() < end and not (self.changed or self.invalidated):
            while ctx.iteration(False):
                pass
            time.sleep(0.02)
        return self.changed | self.invalidated


class Notifications:
    """What the daemon tells systemd (sd_notify()), on a socket of our own: $NOTIFY_SOCKET
    and a watchdog, as systemd sets them for the shipped unit. Read all the time, as PID 1
    does: a sender blocks once a few datagrams are left unread."""

    WATCHDOG_USEC = 30 * 1000000

    def __init__(self, top):
        import threading
        self.path = os.path.join(top, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.seen, self.last = [], time.monotonic()
        self.statuses = []  # when each STATUS= came
        self.lock = threading.Lock()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        while True:
            m = self.sock.recv(4096).decode()
            with self.lock:
                self.seen.append(m)
                self.last = time.monotonic()
                if m.startswith("STATUS="):
                    self.statuses.append(self.last)

    def env(self):
        return {"NOTIFY_SOCKET": self.path, "WATCHDOG_USEC": str(self.WATCHDOG_USEC)}

    def since_mark(self, quiet=0.5):
        """The messages since the last call, once none came for quiet seconds."""
        start = time.monotonic()
        while True:
            time.sleep(0.05)
            with self.lock:
                if time.monotonic() - max(self.last, start) >= quiet:
                    seen, self.seen = self.seen, []
                    return seen


def says(message, line):
    return line in message.split("\n")


def main():
    fx = Fixture()
    bus, address = start_system_bus(fx.top)
    notify = Notifications(fx.top)
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address,
               RUNTIME_DIRECTORY=os.path.join(fx.top, "run"), **notify.env())
    env.pop("JOURNAL_STREAM", None)
    env.pop("WATCHDOG_PID", None)

    def fwctl(*args):
        return subprocess.run([FWCTL, *args], env=env, capture_output=True, text=True,
                              errors="surrogateescape", timeout=30)

    def start_daemon():
        return subprocess.Popen([FW_HELPERD, "--config", fx.conf, "--config-dir", fx.top + "/none",
                                 "--event-source=none", "--sysfs-root", fx.sys,
                                 "--firmware-prefix", fx.top + "/empty-prefix",
                                 "--log-level=debug", "--log-target=stderr"],
                                env=env, stderr=open(os.path.join(fx.top, "daemon.log"), "a"))

    r = fwctl("status")
    check("fwctl says the daemon is not running (exit 3)", r.returncode == 3, repr(r))

    blob = bytes((i * 7 + 3) % 251 for i in range(4097))
    os.makedirs(os.path.join(fx.fw, "vendor"))
    fx.write(os.path.join(fx.fw, "vendor/fw.bin"), blob, "wb")
    served = fx.request("vendor/fw.bin")  # pending before the daemon starts: coldplug
    hostile = fx.request("..!..!etc!passwd".replace("!", "/"))
    missing = fx.request("nothere.bin")

    daemon = start_daemon()
    try:
        ok = wait_for(lambda: loading_of(served) == "0" and data_of(served) == blob)
        check("coldplug: pending request served byte-exact, committed with 0", bool(ok),
              "loading=%r data=%d bytes" % (loading_of(served), len(data_of(served))))
        check("hostile name answered -1", wait_for(lambda: loading_of(hostile) == "-1"),
              loading_of(hostile))
        check("missing firmware answered -1", wait_for(lambda: loading_of(missing) == "-1"),
              loading_of(missing))
        for d in (served, hostile, missing):
            fx.finish(d)
        check("a small file is answered on the loop, without a worker",
              answered_where(fx, "vendor/fw.bin") == ["loop"], repr(answered_where(fx, "vendor/fw.bin")))
        check("a missing name is answered on the loop, without a worker",
              answered_where(fx, "nothere.bin") == ["loop"], repr(answered_where(fx, "nothere.bin")))

        r = wait_for(lambda: fwctl("status", "--json"))
        st = json.loads(r.stdout) if r.returncode == 0 else {}
        c = st.get("counters", {})
        check("status --json counters", c.get("served") == 1 and c.get("missing") == 1
              and c.get("rejected") == 1 and c.get("bytes_served") == 4097
              and c.get("in_flight") == 0, r.stdout + r.stderr)
        check("status --json lists the missing name",
              [e.get("name") for e in st.get("missing_firmware", [])] == ["nothere.bin"], r.stdout)
        check("search path ends with the configured root", st.get("search_path", [""])[-1] == fx.fw,
              repr(st.get("search_path")))
        r = fwctl("status")
        check("status table for people", r.returncode == 0 and "Served" in r.stdout, r.stdout + r.stderr)

        # One answered on the loop leaves nothing in flight: PID 1 is not woken to turn the
        # watchdog on and off for it, only told the new counters (STATUS=) once it is done.
        notify.since_mark()
        alone = fx.request("vendor/fw.bin")
        fwctl("rescan")
        check("a request alone is served", wait_for(lambda: loading_of(alone) == "0"),
              loading_of(alone))
        fx.finish(alone)
        told = notify.since_mark(quiet=1.5)  # new counters wait up to a second to be told
        check("a request answered on the loop: STATUS= told, the watchdog left off",
              any(m.startswith("STATUS=") for m in told) and
              not any(says(m, "WATCHDOG=1") for m in told), repr(told))

        # New counters alone are told at most once a second: five requests about half a
        # second apart, each of which used to be told on its own, are told fewer times.
        def served():
            r = fwctl("status", "--json")
            return json.loads(r.stdout)["counters"]["served"] if r.returncode == 0 else None
        expected = "STATUS=running: %d served" % ((served() or 0) + 5)  # None: fails below
        for _ in range(5):
            dev = fx.request("vendor/fw.bin")
            fwctl("rescan")
            wait_for(lambda: loading_of(dev) == "0")
            fx.finish(dev)
            time.sleep(0.4)
        told = [m for m in notify.since_mark(quiet=1.5) if m.startswith("STATUS=")]
        check("five requests apart: STATUS= told fewer times, the last counters included",
              0 < len(told) < 5 and told[-1].startswith(expected), "%r, expected %r" % (told, expected))

        # A new state does not wait for that second: a reload right after new counters were
        # told is told again CHANGED_DELAY after it, not TELL_INTERVAL after the counters.
        # The bound sits halfway between the two, so that neither a slow reload nor a late
        # read of the first STATUS= can carry one gap across it.
        dev = fx.request("vendor/fw.bin")
        fwctl("rescan")
        wait_for(lambda: loading_of(dev) == "0")
        fx.finish(dev)
        before = len(notify.statuses)
        wait_for(lambda: len(notify.statuses) > before, timeout=3)
        daemon.send_signal(signal.SIGHUP)  # a reload with no client's start-up in the gap
        wait_for(lambda: len(notify.statuses) > before + 1, timeout=3)
        gap = (notify.statuses[before + 1] - notify.statuses[before]
               if len(notify.statuses) > before + 1 else None)
        bound = CHANGED_DELAY + (TELL_INTERVAL - CHANGED_DELAY) / 2
        check("a reload is told without waiting for the second", gap is not None and gap < bound,
              "%s s after the counters" % gap)
        notify.since_mark()

        # Only what may keep the loop waiting goes to a worker: a file larger than
        # REQUEST_INLINE_MAX, and any compressed one (unpacking may wait for memory).
        import lzma
        sizes = {"edge.bin": INLINE_MAX, "large.bin": INLINE_MAX + 1}
        blobs = {n: bytes((i * 13 + len(n)) % 256 for i in range(size)) for n, size in sizes.items()}
        blobs["packed.bin"] = blob
        for n in ("edge.bin", "large.bin"):
            fx.write(os.path.join(fx.fw, n), blobs[n], "wb")
        fx.write(os.path.join(fx.fw, "packed.bin.xz"),
                 lzma.compress(blob, check=lzma.CHECK_CRC32), "wb")
        devs = {n: fx.request(n) for n in blobs}
        fwctl("rescan")
        for n, dev in devs.items():
            check("%s answered byte-exact" % n,
                  wait_for(lambda: loading_of(dev) == "0" and data_of(dev) == blobs[n]),
                  "loading=%r data=%d bytes" % (loading_of(dev), len(data_of(dev))))
            fx.finish(dev)
        for n, place in (("edge.bin", "loop"), ("large.bin", "worker"), ("packed.bin", "worker")):
            check("%s answered on the %s" % (n, place), answered_where(fx, n) == [place],
                  repr(answered_where(fx, n)))
        told = notify.since_mark()
        on = [i for i, m in enumerate(told)
              if says(m, "WATCHDOG=1") and says(m, "WATCHDOG_USEC=%d" % notify.WATCHDOG_USEC)]
        off = [i for i, m in enumerate(told) if says(m, "WATCHDOG_USEC=0")]
        check("requests on a worker: the watchdog on, then off again",
              bool(on and off and on[0] < off[-1]), repr(told))

        # Rescan finds a request that arrived without a uevent (custom fallback).
        watch = PropertiesWatch(address)
        second = fx.request("vendor/fw.bin")
        r = fwctl("rescan")
        check("rescan answers a new request", r.returncode == 0 and
              wait_for(lambda: loading_of(second) == "0" and data_of(second) == blob), r.stderr)
        fx.finish(second)
        emitted, claims = watch.wait_signal(), watch.claims()
        check("PropertiesChanged: sent for exactly the properties that claim it",
              emitted == {p for p, v in claims.items() if v in ("true", "invalidates")},
              "sent %s, claims %s" % (sorted(emitted), claims))
        check("PropertiesChanged: values for EmitsChangedSignal=true, names for =invalidates",
              watch.changed == {p for p, v in claims.items() if v == "true"} and
              watch.invalidated == {p for p, v in claims.items() if v == "invalidates"},
              "values for %s, invalidated %s, claims %s" % (sorted(watch.changed),
                                                            sorted(watch.invalidated), claims))

        odd_missing = fx.request(ODD_MISSING)
        fx.write(os.path.join(fx.fw, ODD_SERVED), blob, "wb")
        odd_served = fx.request(ODD_SERVED)
        fwctl("rescan")
        check("non-UTF-8 names: one missing (-1), one served",
              wait_for(lambda: loading_of(odd_missing) == "-1" and loading_of(odd_served) == "0"),
              (loading_of(odd_missing), loading_of(odd_served)))
        fx.finish(odd_missing)
        fx.finish(odd_served)
        check_odd_names(fwctl, "running")

        # A broken configuration on reload keeps the old one.
        fx.write_config("[Firmware\nSearchPath=relative\n")
        r = fwctl("reload")
        check("reload with a broken config fails and says so", r.returncode != 0, repr(r))
        third = fx.request("vendor/fw.bin")
        fwctl("rescan")
        check("old configuration kept after failed reload",
              wait_for(lambda: loading_of(third) == "0"), loading_of(third))
        fx.finish(third)

        # The daemon keeps the search roots it built; the path parameter, which an admin may
        # write at any time, and a reload must each be seen by the very next request.
        custom = os.path.join(fx.top, "custom-path")
        os.makedirs(os.path.join(custom, "vendor"))
        custom_blob = bytes(reversed(blob))
        fx.write(os.path.join(custom, "vendor/fw.bin"), custom_blob, "wb")

        def served_now():
            dev = fx.request("vendor/fw.bin")
            fwctl("rescan")
            wait_for(lambda: loading_of(dev) == "0")
            got = data_of(dev)
            fx.finish(dev)
            return {blob: "configured", custom_blob: "custom"}.get(got, "%d bytes" % len(got))

        param = os.path.join(fx.sys, "module/firmware_class/parameters/path")
        r = served_now()
        check("path parameter unset: served from the configured root", r == "configured", r)
        fx.write(param, custom + "\n")
        r = served_now()
        check("path parameter set: the next request is served from it", r == "custom", r)
        fx.write(param, "\n")
        r = served_now()
        check("path parameter cleared: the next request is not served from it",
              r == "configured", r)

        # The roots are opened once and kept; one created while running (the kernel's
        # updates/ under the test prefix, ahead of the configured root) is searched by the
        # very next request, and one removed and made anew is the new one, not the old.
        prefix_lib = os.path.join(fx.top, "empty-prefix/lib")

        def make_updates():
            os.makedirs(os.path.join(prefix_lib, "firmware/updates/vendor"))
            fx.write(os.path.join(prefix_lib, "firmware/updates/vendor/fw.bin"), custom_blob, "wb")
        make_updates()
        r = served_now()
        check("a root created while running: the next request is served from it",
              r == "custom", r)
        shutil.rmtree(prefix_lib)
        make_updates()
        r = served_now()
        check("that root removed and made anew: the next request is served from the new one",
              r == "custom", r)
        shutil.rmtree(prefix_lib)
        r = served_now()
        check("that root removed again: the next request is not served from it",
              r == "configured", r)

        # Idle, no root is held open: it would keep its file system from being unmounted.
        def roots_held():
            fds = os.path.join("/proc", str(daemon.pid), "fd")
            held = []
            for fd in os.listdir(fds):
                try:
                    target = os.readlink(os.path.join(fds, fd))
                except OSError:
                    continue
                if target == fx.fw or target.startswith(fx.top + "/empty-prefix"):
                    held.append(target)
            return held
        check("idle: no firmware root held open", wait_for(lambda: not roots_held()),
              repr(roots_held()))

        other = os.path.join(fx.top, "other-firmware")
        os.makedirs(os.path.join(other, "vendor"))
        fx.write(os.path.join(other, "vendor/other.bin"), custom_blob, "wb")
        fx.write_config("[Firmware]\nSearchPath=%s\n" % other)
        r = fwctl("reload")
        dev = fx.request("vendor/other.bin")
        fwctl("rescan")
        check("reload: the next request is served from the new SearchPath=",
              r.returncode == 0 and wait_for(lambda: loading_of(dev) == "0") and
              data_of(dev) == custom_blob, "%r loading=%r" % (r, loading_of(dev)))
        fx.finish(dev)
        fx.write_config("[Firmware]\nSearchPath=%s\n" % fx.fw)
        fwctl("reload")

        # udev's rule leaves requests untagged while this file says the daemon takes them.
        flag = os.path.join(fx.top, "run", "listening")
        check("running: the listening flag exists", os.path.exists(flag))
        # One udev saw before the flag went: the daemon takes it on its way out, since
        # nothing would start a successor for it (no event reaches this daemon: no rescan).
        last = fx.request("vendor/fw.bin")
        daemon.send_signal(signal.SIGTERM)
        check("SIGTERM exits cleanly", daemon.wait(timeout=10) == 0, str(daemon.returncode))
        check("a request pending at stop is answered before exit",
              loading_of(last) == "0" and data_of(last) == blob, loading_of(last))
        check("stopped: the listening flag is gone", not os.path.exists(flag))

        # What was served is remembered in the runtime directory, raw, for the next one.
        fx.write_config("[Firmware]\nSearchPath=%s\n" % fx.fw)
        daemon = start_daemon()
        wait_for(lambda: fwctl("status").returncode == 0)
        check_odd_names(fwctl, "after a restart", missing=False)
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=10)
    finally:
        if daemon.poll() is None:
            daemon.kill()
        bus.terminate()
        bus.wait()
        with open(os.path.join(fx.top, "daemon.log"), errors="backslashreplace") as f:
            log = f.read()
        if not all(results):
            print("--- daemon log ---\n" + log)

    # A broken configuration refuses to start, with exit code 78 and file:line.
    bad = os.path.join(tempdir("fwh-host-"), "bad.conf")
    Fixture.write(bad, "[Service]\nWorkers=zero\n")
    r = subprocess.run([FW_HELPERD, "--config", bad, "--config-dir", "/nonexistent",
                        "--no-bus", "--event-source=none", "--log-target=stderr"],
                       capture_output=True, text=True, timeout=10)
    check("broken config: exit 78 with file:line", r.returncode == 78 and
          (bad + ":2") in r.stderr, repr(r))

    # A drop-in masked with a symlink to /dev/null, as systemd's are, is no configuration error.
    dropins = tempdir("fwh-host-")
    os.symlink("/dev/null", os.path.join(dropins, "50-masked.conf"))
    r = subprocess.run([FW_HELPERD, "--check-config", "--config", "/nonexistent", "--config-dir",
                        dropins, "--log-target=stderr"], capture_output=True, text=True, timeout=10)
    check("drop-in masked with /dev/null: the configuration is fine", r.returncode == 0, repr(r))

    print("%d passed, %d failed" % (results.count(True), results.count(False)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    require("dbus", "gi")
    sys.exit(main())
