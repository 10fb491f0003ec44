"""A hostile Python plugin: the chart name picks how it misbehaves.

The Python twin of `test-support/plugins/hostile` for the sandbox tests
(`tests/e2e/python_plugins.rs`): a Python plugin must meet the same
deadline, memory, output and log caps as a Rust one, and find no file,
socket or environment to reach.
"""

import os
import socket
import sys

from capstan_plugin import Failed, Plugin, Values, log


class Hostile(Plugin):
    name = "python-hostile"
    version = "0.0.1"
    charts = ["any"]

    def overrides(self, app, facts, chart):
        if chart == "loop":
            while True:
                pass
        if chart == "balloon":
            # 1 GiB of list slots, far past any memory cap.
            hoard = [0] * (1 << 27)
            return Values().set("len", len(hoard))
        if chart == "print-flood":
            while True:
                print("flood " * 100)
        if chart == "log-flood":
            while True:
                log.info("flood " * 100)
        if chart == "huge-output":
            return Values().set("blob", "x" * (4 << 20))
        if chart == "read-file":
            try:
                with open("/etc/passwd", encoding="utf-8") as file:
                    return Values().set("read", file.read(100))
            except OSError as error:
                raise Failed(f"read-file denied: {error}") from None
        if chart == "write-file":
            try:
                with open("/tmp/capstan-python-hostile", "w", encoding="utf-8") as file:
                    file.write("escaped")
                return Values().set("wrote", True)
            except OSError as error:
                raise Failed(f"write-file denied: {error}") from None
        if chart == "open-socket":
            try:
                with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                    sock.connect(("127.0.0.1", 22))
                return Values().set("connected", True)
            except OSError as error:
                raise Failed(f"open-socket denied: {error}") from None
        if chart == "resolve":
            try:
                return Values().set("resolved", str(socket.getaddrinfo(b"localhost", 80)))
            except OSError as error:
                raise Failed(f"resolve denied: {error}") from None
        if chart == "read-env":
            return Values().set("environ", dict(os.environ)).set("argv", list(sys.argv))
        if chart == "raise":
            raise ValueError("boom")
        return Values().set("chart", chart)
