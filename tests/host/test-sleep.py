#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host integration test of the suspend/resume side: the real fw-helperd on a private system
bus with python3-dbusmock's logind template, answering requests in a fixture sysfs tree.

Covers: the delay inhibitor taken at start and released on PrepareForSleep(true) once prewarm
is done (or out of time), the memory ceiling, the raised fallback timeout, resume serving cached
names from memory after the file was deleted, deferral of uncached names while the gate (a
tmpfs standing in for the root file system, through the FW_HELPERD_GATE_PATH test hook) is
read-only, the cache released after the grace period with memory back to its baseline, the
lock taken again, a daemon killed mid-cycle, and logind restarting.

The gate cases need a private mount namespace (root and unshare(1)); without one they are
reported as skipped and the rest still runs.

usage: test-sleep.py FW_HELPERD FWCTL
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from privbus import require, start_system_bus, tempdir

FW_HELPERD, FWCTL = sys.argv[1], sys.argv[2]
NS_MARK = "FWH_TEST_SLEEP_IN_NS"
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + str(detail)), flush=True)


def skip(name, why):
    print("skip " + name + ": " + why, flush=True)


CONFIG = """[Firmware]
SearchPath={fw}

[Sleep]
PrewarmFirmware=conf.bin too-big.bin
PrewarmMemoryMax=1M
PrewarmTimeoutSec={prewarm_timeout}
ResumeFirmwareTimeoutSec=120
CacheReleaseSec=2
DeferMaxSec=20
"""


def wait_for(pred, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    return pred()


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def write(path, data, mode="w"):
    with open(path, mode) as f:
        f.write(data)


def pattern(n, seed):
    return bytes((i * seed + 3) % 251 for i in range(n))


class Fixture:
    def __init__(self):
        self.top = tempdir("fwh-sleep-")
        self.sys = os.path.join(self.top, "sys")
        self.fw = os.path.join(self.top, "srv-firmware")
        self.run = os.path.join(self.top, "run")
        self.gate = os.path.join(self.top, "gate")
        self.conf = os.path.join(self.top, "fw-helperd.conf")
        self.timeout = os.path.join(self.sys, "class/firmware/timeout")
        os.makedirs(os.path.join(self.sys, "class/firmware"))
        os.makedirs(os.path.join(self.sys, "module/firmware_class/parameters"))
        os.makedirs(os.path.join(self.sys, "devices/virtual/misc/testdev/subsystem"))
        write(os.path.join(self.sys, "devices/virtual/misc/testdev/uevent"), "")
        os.makedirs(self.fw)
        os.makedirs(self.gate)
        write(self.timeout, "60\n")
        write(os.path.join(self.sys, "module/firmware_class/parameters/path"), "\n")
        self.n = 0

    def config(self, prewarm_timeout="3"):
        write(self.conf, CONFIG.format(fw=self.fw, prewarm_timeout=prewarm_timeout))

    def firmware(self, name, data):
        write(os.path.join(self.fw, name), data, "wb")
        return data

    def request(self, name):
        """A pending request as the kernel lays it out, under the device that asked."""
        self.n += 1
        kobj = name.replace("/", "!")
        dev = os.path.join(self.sys, "devices/virtual/misc/testdev/firmware", kobj)
        os.makedirs(dev)
        write(os.path.join(dev, "loading"), "")
        write(os.path.join(dev, "data"), "")
        write(os.path.join(dev, "uevent"), "FIRMWARE=%s\nTIMEOUT=60\n" % name)
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


def loading_of(dev):
    """The last value written to `loading`: sysfs ignores the file offset, a regular file
    does not ("1" then "0" through one descriptor reads back as "10")."""
    text = read(os.path.join(dev, "loading"))
    return "-1" if text.endswith("-1") else text[-1:]


def data_of(dev):
    return read(os.path.join(dev, "data"), "rb")


class Bus:
    """Calls on the private bus with dbus-python."""

    def __init__(self, address):
        import dbus
        self.dbus = dbus
        self.conn = dbus.bus.BusConnection(address)

    def call(self, dest, path, iface, method, *args, timeout=10):
        obj = self.conn.get_object(dest, path, introspect=False)
        return getattr(obj, method)(*args, dbus_interface=iface, timeout=timeout)

    def fwh(self, method, *args):
        return self.call("org.fwhelperd1", "/org/fwhelperd1", "org.fwhelperd1.Manager", method,
                         *args)

    def prop(self, name):
        try:
            return self.call("org.fwhelperd1", "/org/fwhelperd1",
                             "org.freedesktop.DBus.Properties", "Get",
                             "org.fwhelperd1.Manager", name)
        except self.dbus.exceptions.DBusException:
            return None

    def inhibitors(self):
        try:
            return [(str(w), str(who), str(m)) for (w, who, why, m, uid, pid) in
                    self.call("org.freedesktop.login1", "/org/freedesktop/login1",
                              "org.freedesktop.login1.Manager", "ListInhibitors")]
        except self.dbus.exceptions.DBusException:
            return None

    def prepare_for_sleep(self, start):
        self.call("org.freedesktop.login1", "/org/freedesktop/login1",
                  "org.freedesktop.DBus.Mock", "EmitSignal",
                  "org.freedesktop.login1.Manager", "PrepareForSleep", "b",
                  [self.dbus.Boolean(start)])

    def preparing_for_sleep(self, value):
        """logind's PreparingForSleep property, as the real one sets it around the signal."""
        self.call("org.freedesktop.login1", "/org/freedesktop/login1",
                  "org.freedesktop.DBus.Properties", "Set",
                  "org.freedesktop.login1.Manager", "PreparingForSleep",
                  self.dbus.Boolean(value, variant_level=1))

    def describe(self):
        try:
            return json.loads(str(self.fwh("Describe")))
        except self.dbus.exceptions.DBusException:
            return {}


OUR_LOCK = ("sleep", "fw-helperd", "delay")


def pipes_of(pid):
    """The daemon's pipe fds: the inhibitor is the only pipe it holds."""
    n = 0
    for fd in os.listdir("/proc/%d/fd" % pid):
        if int(fd) <= 2:
            continue
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("pipe:"):
                n += 1
        except OSError:
            pass
    return n


def rss_kib(pid):
    for line in read("/proc/%d/status" % pid).splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def sanitized(pid):
    return "libasan" in read("/proc/%d/maps" % pid)


class Gate:
    """A tmpfs in our private mount namespace whose writability stands in for the root's."""

    def __init__(self, path):
        self.path = path
        self.ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "fwh-gate", path],
                                 capture_output=True).returncode == 0

    def set(self, writable):
        subprocess.run(["mount", "-o", "remount," + ("rw" if writable else "ro"), self.path],
                       check=True)


def main():
    fx = Fixture()
    fx.config()
    gate = Gate(fx.gate)
    procs = {}
    procs["bus"], address = start_system_bus(fx.top)
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address, RUNTIME_DIRECTORY=fx.run)
    env.pop("JOURNAL_STREAM", None)
    if gate.ok:
        env["FW_HELPERD_GATE_PATH"] = fx.gate
    bus = Bus(address)
    log_path = os.path.join(fx.top, "daemon.log")
    log_file = open(log_path, "w")

    def start_logind():
        procs["logind"] = subprocess.Popen(
            [sys.executable, "-m", "dbusmock", "--system", "--template", "logind"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return wait_for(lambda: bus.inhibitors() is not None)

    def start_daemon():
        log_file.write("--- daemon start ---\n")
        log_file.flush()
        procs["daemon"] = subprocess.Popen(
            [FW_HELPERD, "--config", fx.conf, "--config-dir", fx.top + "/none",
             "--event-source=none", "--sysfs-root", fx.sys,
             "--firmware-prefix", fx.top + "/empty-prefix", "--log-level=debug",
             "--log-target=stderr"], env=env, stderr=log_file)
        return wait_for(lambda: bus.prop("State") == "running")

    def fwctl(*args):
        return subprocess.run([FWCTL, *args], env=env, capture_output=True, text=True, timeout=30)

    def daemon_log():
        return read(log_path)

    def rescan():
        try:
            bus.fwh("Rescan")
        except bus.dbus.exceptions.DBusException:
            pass

    def sleep_state():
        return bus.prop("SleepState")

    try:
        check("logind mock is up", start_logind())
        a = fx.firmware("a.bin", pattern(4097, 7))
        conf = fx.firmware("conf.bin", pattern(3000, 11))
        fx.firmware("too-big.bin", pattern(2 * 1024 * 1024, 13))
        c = fx.firmware("c.bin", pattern(5000, 17))
        d = fx.firmware("d.bin", pattern(6000, 19))
        first = fx.request("a.bin")  # pending before the start: served from disk, recorded
        check("daemon starts", start_daemon(), daemon_log())
        pid = procs["daemon"].pid

        # --- idle: lock held, names recorded ---
        check("a.bin served at start", wait_for(lambda: loading_of(first) == "0"
                                                and data_of(first) == a))
        fx.finish(first)
        check("delay inhibitor taken at start",
              wait_for(lambda: OUR_LOCK in (bus.inhibitors() or [])), bus.inhibitors())
        check("daemon holds the inhibitor fd", wait_for(lambda: pipes_of(pid) == 1),
              pipes_of(pid))
        check("SleepState idle", sleep_state() == "idle", sleep_state())
        listed = {str(n): (int(s), str(src), [str(x) for x in devs])
                  for (n, s, src, devs) in bus.fwh("ListFirmware")}
        check("ListFirmware: a.bin served to its device",
              listed.get("a.bin") == (4097, "served", ["/devices/virtual/misc/testdev"]), listed)
        check("ListFirmware: configured names", listed.get("conf.bin", (0, ""))[1] == "config",
              listed)
        check("registry persisted under RUNTIME_DIRECTORY",
              "a.bin\t4097\t/devices/virtual/misc/testdev" in read(fx.run + "/registry"))
        r = fwctl("list")
        check("fwctl list shows the registry", r.returncode == 0 and any(
              line.split()[:3] == ["a.bin", "4.0K", "served"] for line in r.stdout.splitlines()),
              r.stdout + r.stderr)
        r = fwctl("list", "--json")
        entries = {e.get("name"): e for e in json.loads(r.stdout or "[]")}
        check("fwctl list --json", entries.get("a.bin", {}).get("devices") ==
              ["/devices/virtual/misc/testdev"] and entries.get("conf.bin", {}).get("source")
              == "config", r.stdout + r.stderr)
        baseline = rss_kib(pid)

        # --- PrepareForSleep(true): prewarm, raise timeout, release ---
        t0 = time.monotonic()
        bus.prepare_for_sleep(True)
        check("lock released after prewarm", wait_for(lambda: OUR_LOCK not in bus.inhibitors(), 20),
              bus.inhibitors())
        # judged by what the daemon did, not by the clock (a loaded host stretches it): the
        # lock went because the prewarm finished, not because PrewarmTimeoutSec ran out
        print("# lock released %.3f s after PrepareForSleep(true)" % (time.monotonic() - t0))
        check("released because the prewarm finished", "out of time" not in daemon_log(),
              daemon_log()[-1500:])
        check("inhibitor fd closed", pipes_of(pid) == 0, pipes_of(pid))
        check("SleepState sleeping", wait_for(lambda: sleep_state() == "sleeping"), sleep_state())
        check("a.bin and conf.bin held (too-big.bin over PrewarmMemoryMax)",
              bus.prop("CacheEntries") == 2 and bus.prop("CacheBytes") == 4097 + 3000,
              (bus.prop("CacheEntries"), bus.prop("CacheBytes")))
        check("what did not fit is logged", "Prewarmed 2 firmware images" in daemon_log()
              and "not held: too-big.bin" in daemon_log(), daemon_log()[-2000:])
        check("fallback timeout raised for the resume window", read(fx.timeout).strip() == "120",
              read(fx.timeout))
        st = json.loads(fwctl("status", "--json").stdout or "{}").get("sleep", {})
        check("status --json shows the sleep state", st.get("state") == "sleeping"
              and st.get("cache_entries") == 2, st)

        # --- resume: cached name from memory, file deleted; uncached deferred behind the gate ---
        os.unlink(os.path.join(fx.fw, "a.bin"))
        if gate.ok:
            gate.set(False)
        bus.prepare_for_sleep(False)
        check("SleepState resuming", wait_for(lambda: sleep_state() == "resuming"), sleep_state())
        check("lock taken again on resume", wait_for(lambda: OUR_LOCK in bus.inhibitors()),
              bus.inhibitors())
        cached = fx.request("a.bin")
        uncached = fx.request("c.bin")
        rescan()
        check("cached name served from memory though deleted from disk",
              wait_for(lambda: loading_of(cached) == "0" and data_of(cached) == a),
              loading_of(cached))
        check("served entry says it came from memory",
              wait_for(lambda: "(held in memory)" in daemon_log()))
        fx.finish(cached)
        if gate.ok:
            time.sleep(1.0)
            check("uncached name deferred while the root is read-only",
                  loading_of(uncached) == "" and bus.describe().get("sleep", {}).get("deferred") == 1,
                  (loading_of(uncached), bus.describe().get("sleep")))
            gate.set(True)
            t0 = time.monotonic()
            check("deferred name served once the root is writable again",
                  wait_for(lambda: loading_of(uncached) == "0" and data_of(uncached) == c, 20),
                  loading_of(uncached))
            print("# served %.3f s after the remount" % (time.monotonic() - t0))
            check("deferral logged with how long it waited",
                  "waited" in daemon_log() and "(gate)" in daemon_log(), daemon_log()[-2000:])
        else:
            skip("deferral behind the gate", "no private mount namespace (needs root)")
            wait_for(lambda: loading_of(uncached) == "0")
        fx.finish(uncached)

        # --- grace period over: memory released, timeout restored ---
        check("cache released after CacheReleaseSec",
              wait_for(lambda: bus.prop("CacheEntries") == 0 and bus.prop("CacheBytes") == 0, 20),
              bus.prop("CacheEntries"))
        check("SleepState idle again", wait_for(lambda: sleep_state() == "idle"), sleep_state())
        check("release logged", "Released 2 cached firmware images" in daemon_log())
        check("fallback timeout restored", wait_for(lambda: read(fx.timeout).strip() == "60"),
              read(fx.timeout))
        check("lock held for the next cycle", OUR_LOCK in bus.inhibitors() and pipes_of(pid) == 1,
              (bus.inhibitors(), pipes_of(pid)))
        check("sleep-state file gone when idle", not os.path.exists(fx.run + "/sleep-state"))

        # --- slow prewarm: a 1.5 GiB image cannot be read in 30 ms; suspend is not held up ---
        fx.firmware("a.bin", a)
        with open(os.path.join(fx.fw, "huge.bin"), "wb") as f:
            f.truncate(1536 * 1024 * 1024)
        write(fx.conf, CONFIG.format(fw=fx.fw, prewarm_timeout="30ms")
              .replace("conf.bin too-big.bin", "huge.bin").replace("=1M", "=2G")
              .replace("[Firmware]\n", "[Firmware]\nMaxSize=2G\n"))
        r = fwctl("reload")
        check("reload with a short prewarm deadline", r.returncode == 0, r.stderr)
        before = rss_kib(pid)
        t0 = time.monotonic()
        bus.prepare_for_sleep(True)
        check("lock released at the deadline though prewarm is slow",
              wait_for(lambda: OUR_LOCK not in bus.inhibitors(), 5), bus.inhibitors())
        # not judged by the clock (a loaded machine stretches it): "out of time" below says
        # the deadline, not the end of the read, let the system go
        print("# lock released %.3f s after PrepareForSleep(true)" % (time.monotonic() - t0))
        check("the late name is logged", wait_for(lambda: any(
              "out of time" in line and "huge.bin" in line for line in daemon_log().splitlines())),
              daemon_log()[-1500:])
        check("a.bin still prewarmed", wait_for(lambda: bus.prop("CacheEntries") >= 1),
              bus.prop("CacheEntries"))
        bus.prepare_for_sleep(False)
        check("released again after resume", wait_for(lambda: bus.prop("CacheEntries") == 0, 20))
        os.unlink(os.path.join(fx.fw, "huge.bin"))
        if not sanitized(pid):
            check("memory back to its baseline after release",
                  wait_for(lambda: rss_kib(pid) < max(before, baseline) + 8 * 1024, 15),
                  (baseline, before, rss_kib(pid)))

        # --- on demand: Prewarm() ---
        fx.config()
        fwctl("reload")
        r = fwctl("prewarm")
        # a.bin, c.bin (served since), conf.bin; too-big.bin still does not fit
        check("fwctl prewarm fills the cache", r.returncode == 0 and bus.prop("CacheEntries") == 3
              and bus.prop("CacheBytes") == 4097 + 5000 + 3000 and "Holding 3" in r.stdout,
              (r.stdout, r.stderr, bus.prop("CacheEntries")))
        check("on demand: the lock is kept", OUR_LOCK in bus.inhibitors())
        check("and releases it after the grace period",
              wait_for(lambda: bus.prop("CacheEntries") == 0, 20))

        # --- many cycles: memory held between cycles does not grow ---
        fx.firmware("big.bin", pattern(4 * 1024 * 1024, 23))
        write(fx.conf, CONFIG.format(fw=fx.fw, prewarm_timeout="3")
              .replace("conf.bin too-big.bin", "conf.bin big.bin").replace("=1M", "=8M")
              .replace("CacheReleaseSec=2", "CacheReleaseSec=50ms"))
        fwctl("reload")

        def cycle():
            bus.prepare_for_sleep(True)
            ok = wait_for(lambda: sleep_state() == "sleeping" and OUR_LOCK not in bus.inhibitors())
            held = bus.prop("CacheBytes")
            bus.prepare_for_sleep(False)
            return ok and wait_for(lambda: sleep_state() == "idle" and bus.prop("CacheEntries") == 0
                                   and OUR_LOCK in bus.inhibitors()) and held

        held = [cycle() for _ in range(3)]
        warm = rss_kib(pid)
        held += [cycle() for _ in range(15)]
        check("18 cycles, each holding the big image and releasing it",
              all(h and h >= 4 * 1024 * 1024 for h in held), held)
        if sanitized(pid):
            skip("memory across cycles", "AddressSanitizer keeps freed memory in quarantine")
        else:
            check("no growth across cycles", rss_kib(pid) <= warm + 1024, (warm, rss_kib(pid)))
            check("memory back to the idle baseline (the 4 MiB image is not kept)",
                  rss_kib(pid) <= baseline + 2048, (baseline, rss_kib(pid)))
        fx.config()
        fwctl("reload")

        # --- daemon killed mid-cycle: the registry and the cycle survive ---
        bus.preparing_for_sleep(True)
        bus.prepare_for_sleep(True)
        check("sleeping again", wait_for(lambda: sleep_state() == "sleeping"), sleep_state())
        check("timeout raised", read(fx.timeout).strip() == "120", read(fx.timeout))
        procs["daemon"].kill()
        procs["daemon"].wait()
        if gate.ok:
            gate.set(False)
        pending = fx.request("d.bin")
        check("daemon restarts", start_daemon(), daemon_log()[-2000:])
        pid = procs["daemon"].pid
        check("restarted while logind prepares for sleep: still sleeping",
              wait_for(lambda: sleep_state() == "sleeping") and time.sleep(0.3) is None
              and sleep_state() == "sleeping", sleep_state())
        bus.preparing_for_sleep(False)
        bus.prepare_for_sleep(False)
        check("the resume after the restart is picked up (resuming)",
              wait_for(lambda: sleep_state() == "resuming"), sleep_state())
        listed = [str(n) for (n, s, src, devs) in bus.fwh("ListFirmware")]
        check("registry survived the restart", "a.bin" in listed, listed)
        if gate.ok:
            time.sleep(0.5)
            check("pending request found at start and deferred", loading_of(pending) == "",
                  loading_of(pending))
            gate.set(True)
        check("pending request answered after the restart",
              wait_for(lambda: loading_of(pending) == "0" and data_of(pending) == d, 20),
              loading_of(pending))
        fx.finish(pending)
        check("timeout saved by the killed instance restored",
              wait_for(lambda: read(fx.timeout).strip() == "60", 20), read(fx.timeout))

        # --- logind restarts: keep serving, lock taken again ---
        check("lock held before logind goes", wait_for(lambda: OUR_LOCK in bus.inhibitors()))
        procs["logind"].terminate()
        procs["logind"].wait()
        check("lock dropped with logind", wait_for(lambda: pipes_of(pid) == 0), pipes_of(pid))
        alone = fx.request("c.bin")
        rescan()
        check("serving on without logind",
              wait_for(lambda: loading_of(alone) == "0" and data_of(alone) == c))
        fx.finish(alone)
        check("logind back", start_logind())
        check("lock taken again from the new logind",
              wait_for(lambda: OUR_LOCK in bus.inhibitors() and pipes_of(pid) == 1),
              (bus.inhibitors(), pipes_of(pid)))

        procs["daemon"].send_signal(signal.SIGTERM)
        check("SIGTERM exits cleanly", procs["daemon"].wait(timeout=10) == 0,
              procs["daemon"].returncode)

        # --- start on a read-only root: what is on disk is served, what is not waits ---
        if gate.ok:
            gate.set(False)
            present = fx.request("c.bin")
            later = fx.request("late.bin")
            check("daemon starts on a read-only root", start_daemon(), daemon_log()[-2000:])
            check("a name on disk is served at once",
                  wait_for(lambda: loading_of(present) == "0" and data_of(present) == c, 15))
            time.sleep(0.5)
            check("a missing name waits for more file systems", loading_of(later) == ""
                  and bus.describe().get("sleep", {}).get("deferred") == 1,
                  (loading_of(later), bus.describe().get("sleep")))
            late = fx.firmware("late.bin", pattern(777, 29))
            gate.set(True)
            check("and is served once the root is writable",
                  wait_for(lambda: loading_of(later) == "0" and data_of(later) == late, 15),
                  loading_of(later))
            procs["daemon"].send_signal(signal.SIGTERM)
            procs["daemon"].wait(timeout=10)
        else:
            skip("start on a read-only root", "no private mount namespace (needs root)")
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        log_file.close()
        if not all(results):
            print("--- daemon log ---\n" + daemon_log())
        if gate.ok:
            subprocess.run(["umount", fx.gate])

    print("%d passed, %d failed" % (results.count(True), results.count(False)))
    return 0 if all(results) else 1


def in_private_namespace():
    """Re-runs this script in its own mount namespace when it can (root), for the gate."""
    if os.environ.get(NS_MARK) or os.geteuid() != 0 or not shutil.which("unshare"):
        return None
    env = dict(os.environ, **{NS_MARK: "1"})
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "true"],
                       capture_output=True)
    if r.returncode != 0:
        return None
    return subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                           *sys.argv], env=env).returncode


if __name__ == "__main__":
    require("dbus", "dbusmock")
    rc = in_private_namespace()
    sys.exit(rc if rc is not None else main())
