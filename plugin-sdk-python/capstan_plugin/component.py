"""The component side: turns a `Plugin` subclass into the
`capstan:plugin/override-plugin` world's exports for componentize-py.

Import it only inside a component build: it needs the `wit_world`
bindings componentize-py generates from `wit/v0.1/plugin.wit`. A plugin's
`app.py` (what the scaffold writes) is one line of use:

    WitWorld = export(MyPlugin)

Each export converts the WIT values into the SDK's types, calls the plugin,
and converts the answer back: `PluginError`s become the WIT `plugin-error`
of their kind, any other `Exception` becomes `failed` with its type and
message (its traceback goes to stderr, which the host logs), and a
`MemoryError` is left to end the call, so the host reports the memory cap
it hit.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any, Callable

import wit_world  # type: ignore[import-not-found]
from componentize_py_types import Err  # type: ignore[import-not-found]
from wit_world.imports import host as wit_host  # type: ignore[import-not-found]
from wit_world.imports import types as wit  # type: ignore[import-not-found]

from . import log as _log
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
from .plugin import Hook, HookOutcome, Plugin, PluginError, WorkloadKind, values_of

_LEVELS = {
    "trace": wit.LogLevel.TRACE,
    "debug": wit.LogLevel.DEBUG,
    "info": wit.LogLevel.INFO,
    "warn": wit.LogLevel.WARN,
    "error": wit.LogLevel.ERROR,
}

_ERRORS = {
    "invalid-facts": wit.PluginError_InvalidFacts,
    "unsupported": wit.PluginError_Unsupported,
    "failed": wit.PluginError_Failed,
}


def _to_host(level: str, message: str) -> None:
    wit_host.log(_LEVELS[level], message)


def export(plugin_class: type[Plugin]) -> type:
    """The `WitWorld` class componentize-py exports for `plugin_class`."""
    _log.set_sink(_to_host)
    plugin = plugin_class()

    class WitWorld(wit_world.WitWorld):
        def info(self) -> Any:
            return wit.PluginInfo(
                name=plugin.name,
                version=plugin.version,
                charts=list(plugin.charts),
                hooks=[wit.Hook[h.name] for h in plugin.hooks],
                decides_workloads=plugin.decides_workloads,
            )

        def overrides(self, app: Any, facts: Any, chart: str) -> str:
            answer = _guarded(lambda: plugin.overrides(_app(app), _facts(facts), chart))
            return _guarded(lambda: values_of(answer).to_json())

        def workload_kind(self, app: Any, facts: Any, component: Any) -> Any:
            kind = _guarded(
                lambda: plugin.workload_kind(_app(app), _facts(facts), _component(component))
            )
            if not isinstance(kind, WorkloadKind):
                raise Err(wit.PluginError_Failed(f"workload_kind returned {kind!r}"))
            return wit.WorkloadKind[kind.name]

        def lifecycle(self, hook: Any, app: Any, facts: Any) -> Any:
            outcome = _guarded(lambda: plugin.lifecycle(Hook[hook.name], _app(app), _facts(facts)))
            if not isinstance(outcome, HookOutcome):
                raise Err(wit.PluginError_Failed(f"lifecycle returned {outcome!r}"))
            if outcome.veto_reason is not None:
                return wit.HookOutcome_Veto(outcome.veto_reason)
            return wit.HookOutcome_Proceed()

    return WitWorld


def _guarded(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except PluginError as error:
        raise Err(_ERRORS[error.kind](error.message)) from None
    except MemoryError:
        raise
    except Exception as error:  # noqa: BLE001 - every other failure is `failed`
        traceback.print_exc(file=sys.stderr)
        raise Err(wit.PluginError_Failed(f"{type(error).__name__}: {error}")) from None


def _app(app: Any) -> App:
    return App(name=app.name, version=app.version)


def _facts(facts: Any) -> Facts:
    return Facts(
        system_mode=SystemMode[facts.system_mode.name],
        controller_count=facts.controller_count,
        worker_count=facts.worker_count,
        nodes=[
            Node(
                name=n.name,
                roles=[NodeRole[r.name] for r in n.roles],
                labels={label.key: label.value for label in n.labels},
                schedulable=n.schedulable,
            )
            for n in facts.nodes
        ],
        storage_backends=[
            StorageBackend(
                name=b.name,
                kind=StorageKind[b.kind.name],
                replication=b.replication,
                monitors=list(b.monitors),
                pools=list(b.pools),
                is_default=b.is_default,
            )
            for b in facts.storage_backends
        ],
        local_volumes=[
            LocalVolume(
                name=v.name,
                node=v.node,
                host_path=v.host_path,
                size=v.size,
                storage_class=v.storage_class,
            )
            for v in facts.local_volumes
        ],
        kubernetes_version=facts.kubernetes_version,
        extra=json.loads(facts.extra) if facts.extra else {},
    )


def _component(component: Any) -> Component:
    return Component(
        name=component.name,
        chart=component.chart,
        workload=component.workload,
        volumes=[
            VolumeTrait(
                container=v.container,
                storage_class_name=v.storage_class_name,
                size=v.size,
                path=v.path,
            )
            for v in component.volumes
        ],
        local_volumes=list(component.local_volumes),
    )
