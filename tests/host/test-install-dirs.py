#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What `meson install` lays down follows --prefix: the directories asked of pkg-config
(systemd.pc, udev.pc, dbus-1.pc, bash-completion.pc) are asked with our prefix, and an
override option still wins. Configures the source tree once in a temporary build directory.

usage: test-install-dirs.py MESON SOURCE_DIR
"""
import json
import os
import subprocess
import sys

from privbus import tempdir

# An absolute option of its own, not derived from the prefix (rules.d/meson.build).
NOT_UNDER_PREFIX = ("50-firmware.rules",)


def main(meson, source):
    top = tempdir("fwh-install-")
    prefix = os.path.join(top, "prefix")
    catalogs = os.path.join(top, "catalogs")
    build = os.path.join(top, "build")
    r = subprocess.run([meson, "setup", build, source, "--prefix=" + prefix, "-Dman=disabled",
                        "-Dcatalogdir=" + catalogs], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        print("FAIL meson setup\n" + r.stdout + r.stderr)
        return 1
    r = subprocess.run([meson, "introspect", "--installed", build], capture_output=True,
                       text=True, timeout=60)
    installed = {os.path.basename(src): dest for src, dest in json.loads(r.stdout).items()}
    failed = 0
    for name, dest in sorted(installed.items()):
        if name in NOT_UNDER_PREFIX:
            continue
        want = catalogs if name.endswith(".catalog") else prefix
        ok = dest.startswith(want + "/")
        failed += not ok
        print("%s %s -> %s" % ("ok  " if ok else "FAIL", name, dest))
    for name in ("fw-helperd.service", "fw-helperd.catalog", "org.fwhelperd1.conf", "fwctl.bash"):
        if name not in installed:
            print("FAIL %s is not installed" % name)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
