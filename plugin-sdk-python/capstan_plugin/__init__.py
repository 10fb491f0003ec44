"""Write capstan override plugins in Python.

A capstan plugin is a WebAssembly component the platform runs in a sandbox
to compute Helm values, workload kinds and lifecycle verdicts for its app.
This package gives plugin authors the same things the Rust SDK does:

- `Plugin`, a base class whose methods default to "not served";
- typed `Facts` about the platform;
- `Values`, a builder for the values `overrides` returns;
- `log`, lines to the host's log;
- `testing`, to call a plugin natively under pytest;
- `component.export`, which componentize-py's entry module uses to export
  a plugin as the `capstan:plugin/override-plugin@0.1.0` world.

Example:

    from capstan_plugin import Facts, Plugin, Unsupported, Values

    class Replicas(Plugin):
        name = "replicas"
        charts = ["web"]

        def overrides(self, app, facts, chart):
            if chart != "web":
                raise Unsupported(f"chart {chart}")
            return Values().set("replicaCount", min(facts.controller_count, 3))
"""

from . import log
from .facts import (
    App,
    Component,
    Facts,
    LocalVolume,
    Node,
    NodeRole,
    StorageBackend,
    StorageKind,
    SystemMode,
    VolumeTrait,
)
from .plugin import (
    Failed,
    Hook,
    HookOutcome,
    InvalidFacts,
    Plugin,
    PluginError,
    Unsupported,
    Values,
    WorkloadKind,
    canonical_json,
)

#: The WIT package this SDK speaks (`wit/v0.1/plugin.wit`).
WIT_PACKAGE = "capstan:plugin@0.1.0"

__all__ = [
    "App",
    "Component",
    "Facts",
    "Failed",
    "Hook",
    "HookOutcome",
    "InvalidFacts",
    "LocalVolume",
    "Node",
    "NodeRole",
    "Plugin",
    "PluginError",
    "StorageBackend",
    "StorageKind",
    "SystemMode",
    "Unsupported",
    "Values",
    "VolumeTrait",
    "WIT_PACKAGE",
    "WorkloadKind",
    "canonical_json",
    "log",
]
