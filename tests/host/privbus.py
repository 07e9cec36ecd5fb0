# SPDX-License-Identifier: MIT
"""The private dbus-daemon of the host tests."""
import socket
import time


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
