"""Lines to the host's log, under the plugin's name.

Inside a component each line goes to the host's `log` import, which
charges it against the call's log budget (a flood ends the call with
`output-too-large`). Natively (under pytest) lines are kept for
`capstan_plugin.testing.take_logs`.
"""

from __future__ import annotations

from typing import Callable

LEVELS = ("trace", "debug", "info", "warn", "error")

_lines: list[tuple[str, str]] = []


def _keep(level: str, message: str) -> None:
    _lines.append((level, message))


_sink: Callable[[str, str], None] = _keep


def set_sink(sink: Callable[[str, str], None]) -> None:
    """Where lines go; the component entry points it at the host."""
    global _sink
    _sink = sink


def log(level: str, message: str) -> None:
    """Writes `message` at `level` (one of `LEVELS`)."""
    if level not in LEVELS:
        raise ValueError(f"log level {level!r} is not one of {', '.join(LEVELS)}")
    _sink(level, str(message))


def trace(message: str) -> None:
    log("trace", message)


def debug(message: str) -> None:
    log("debug", message)


def info(message: str) -> None:
    log("info", message)


def warn(message: str) -> None:
    log("warn", message)


def error(message: str) -> None:
    log("error", message)
