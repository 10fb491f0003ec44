"""Calling a plugin natively, under pytest, the way the host would.

The helpers call a `Plugin` subclass directly (no wasm) with the app
`test-app` 1.0.0, and return what the plugin returned or raise what it
raised, as the Rust SDK's `testing` module does. `load_facts` reads the
same fixture files `capstan plugin run --facts` reads (JSON always, YAML
when PyYAML is installed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import log as _log
from .facts import App, Component, Facts
from .plugin import Hook, HookOutcome, Plugin, Values, WorkloadKind, values_of


def test_app() -> App:
    """The app the helpers pass: `test-app` version `1.0.0`."""
    return App("test-app", "1.0.0")


# pytest would collect `test_app` as a test without this.
test_app.__test__ = False  # type: ignore[attr-defined]


def overrides(plugin: type[Plugin], facts: Facts, chart: str) -> Values:
    """Calls `plugin().overrides` for `chart`; raises what it raises."""
    return values_of(plugin().overrides(test_app(), facts, chart))


def workload_kind(plugin: type[Plugin], facts: Facts, component: Component) -> WorkloadKind:
    """Calls `plugin().workload_kind` for `component`."""
    return plugin().workload_kind(test_app(), facts, component)


def lifecycle(plugin: type[Plugin], hook: Hook, facts: Facts) -> HookOutcome:
    """Calls `plugin().lifecycle` for `hook`."""
    return plugin().lifecycle(hook, test_app(), facts)


def take_logs() -> list[tuple[str, str]]:
    """The `(level, message)` lines plugin calls logged so far, cleared."""
    lines = list(_log._lines)
    _log._lines.clear()
    return lines


def load_facts(path: str | Path) -> Facts:
    """Facts from a fixture file: `.json`, or `.yaml`/`.yml` with PyYAML."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    data: Any
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml  # type: ignore[import-untyped]
        except ImportError as missing:
            raise RuntimeError(
                f"reading {path}: YAML fixtures need PyYAML (pip install pyyaml), or use JSON"
            ) from missing
        data = yaml.safe_load(text)
    else:
        data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: facts must be a mapping")
    return Facts.from_dict(data)
