# SPDX-License-Identifier: MIT
"""What the host tests share: their temporary directory, the check for what they need, and
the private dbus-daemon they run on."""
import atexit
import importlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

# meson's exit status for a skipped test
EXIT_SKIP = 77

SYSTEM_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={path}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/><allow own="*"/><allow send_destination="*"/><allow receive_sender="*"/>
  </policy>
</busconfig>
"""


def require(*modules):
    """Exits with 77 (meson counts it as skipped) when dbus-daemon or one of the Python
    modules (e.g. "dbus", "dbusmock", "gi") is missing: tests/setup-deps.sh installs them."""
    missing = [] if shutil.which("dbus-daemon") else ["dbus-daemon"]
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append("python3 module " + module)
    if missing:
        print("skip: %s missing (tests/setup-deps.sh installs it)" % ", ".join(missing))
        sys.exit(EXIT_SKIP)


def tempdir(prefix):
    """A fresh directory, removed when the test exits however it ends."""
    top = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, top, ignore_errors=True)
    return top


def wait_accepting(path, timeout=10):
    """The socket file appears at bind(), before listen(): wait until it accepts."""
    end = time.monotonic() + timeout
    while True:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(path)
                return True
            except OSError:
                if time.monotonic() > end:
                    return False
        time.sleep(0.02)


def start_system_bus(top):
    """A dbus-daemon of type system listening in top; returns it and its address."""
    path = os.path.join(top, "bus")
    conf = os.path.join(top, "bus.conf")
    with open(conf, "w") as f:
        f.write(SYSTEM_BUS_CONFIG.format(path=path))
    bus = subprocess.Popen(["dbus-daemon", "--config-file=" + conf, "--nofork"])
    wait_accepting(path)
    return bus, "unix:path=" + path
