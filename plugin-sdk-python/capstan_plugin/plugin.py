"""The plugin class, its answers and its errors.

A plugin subclasses `Plugin`, declares what it serves in class attributes
(`name`, `version`, `charts`, `hooks`, `decides_workloads`) and overrides
the methods it implements. Each method has a default that says "not
served", as the Rust SDK's trait does, so a plugin writes only what it
does. Errors are exceptions: raise `InvalidFacts`, `Unsupported` or
`Failed` (all `PluginError`); any other exception reaches the host as
`failed` with its type and message.
"""

from __future__ import annotations

import copy
import enum
import json
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable

from .facts import App, Component, Facts


class Hook(enum.Enum):
    """A point in an app's life where the platform asks its plugins."""

    SEMANTIC_CHECK = "semantic-check"
    PRE_APPLY = "pre-apply"
    POST_APPLY = "post-apply"
    PRE_REMOVE = "pre-remove"
    POST_REMOVE = "post-remove"
    PRE_UPDATE = "pre-update"
    POST_UPDATE = "post-update"


class WorkloadKind(enum.Enum):
    """The kind of Kubernetes workload a component runs as."""

    DEPLOYMENT = "deployment"
    STATEFUL_SET = "stateful-set"


@dataclass(frozen=True)
class HookOutcome:
    """A plugin's verdict on a hook: proceed, or veto with a reason."""

    veto_reason: str | None = None

    @staticmethod
    def proceed() -> HookOutcome:
        """Go on with the operation."""
        return HookOutcome()

    @staticmethod
    def veto(reason: str) -> HookOutcome:
        """Stop the operation; `reason` is shown to the operator."""
        return HookOutcome(reason)

    @property
    def vetoed(self) -> bool:
        return self.veto_reason is not None


class PluginError(Exception):
    """A failure the plugin reports itself (the WIT `plugin-error`)."""

    kind: ClassVar[str] = "failed"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidFacts(PluginError):
    """The facts lack something the plugin needs, or contradict each other."""

    kind = "invalid-facts"


class Unsupported(PluginError):
    """The call asked for a chart, component or hook this plugin does not serve."""

    kind = "unsupported"


class Failed(PluginError):
    """Any other failure, with a message for the operator."""

    kind = "failed"


class Values:
    """Helm values under construction: a JSON object built with dotted paths.

    >>> Values().set("replicaCount", 2).set("image.tag", "1.2").to_json()
    '{"image":{"tag":"1.2"},"replicaCount":2}'
    """

    def __init__(self, root: dict[str, Any] | None = None) -> None:
        self.root: dict[str, Any] = dict(root or {})

    def set(self, path: str, value: Any) -> Values:
        """Sets `path` (dot separated, `a.b.c`) to `value`, creating the
        maps on the way and replacing anything that was not a map."""
        parts = path.split(".")
        node = self.root
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = copy.deepcopy(value)
        return self

    def merge(self, path: str, value: Any) -> Values:
        """Merges `value` in at `path` (`""` for the root): maps merge
        deeply, everything else replaces. At the root only a dict merges;
        any other value is ignored."""
        wrapped = copy.deepcopy(value)
        for part in reversed([p for p in path.split(".") if p]):
            wrapped = {part: wrapped}
        if isinstance(wrapped, dict):
            for key, item in wrapped.items():
                self.root[key] = _merged(self.root.get(key), item)
        return self

    def get(self, path: str) -> Any:
        """The value at a dotted path, or None (for tests)."""
        node: Any = self.root
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def to_dict(self) -> dict[str, Any]:
        """The values as a dict (a deep copy)."""
        return copy.deepcopy(self.root)

    def to_json(self) -> str:
        """The values as compact JSON text with sorted keys, what
        `overrides` returns to the host (the Rust SDK writes the same)."""
        return canonical_json(self.root)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Values) and self.root == other.root

    def __repr__(self) -> str:
        return f"Values({self.root!r})"


def canonical_json(value: Any, *, pretty: bool = False) -> str:
    """JSON text as serde_json writes a `serde_json::Value` (keys sorted,
    no ASCII escaping): compact, or with two-space indents when `pretty`.
    The shared test vectors are written in the pretty form."""
    if pretty:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=2)
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _merged(slot: Any, value: Any) -> Any:
    if isinstance(slot, dict) and isinstance(value, dict):
        out = dict(slot)
        for key, item in value.items():
            out[key] = _merged(out.get(key), item)
        return out
    return value


class Plugin:
    """The base class of a capstan plugin.

    Set the class attributes, override what the plugin does:

    - `overrides(app, facts, chart)`: Helm values for `chart`, as `Values`
      or a dict. Default: `Unsupported`.
    - `workload_kind(app, facts, component)`: a `WorkloadKind`. Default:
      `Unsupported` (the host's default rule decides).
    - `lifecycle(hook, app, facts)`: a `HookOutcome`. Default: proceed.
    """

    name: ClassVar[str] = ""
    version: ClassVar[str] = "0.1.0"
    charts: ClassVar[Iterable[str]] = ()
    hooks: ClassVar[Iterable[Hook]] = ()
    decides_workloads: ClassVar[bool] = False

    def overrides(self, app: App, facts: Facts, chart: str) -> Values | dict[str, Any]:
        raise Unsupported(f"chart {chart}")

    def workload_kind(self, app: App, facts: Facts, component: Component) -> WorkloadKind:
        raise Unsupported("this plugin does not decide workload kinds")

    def lifecycle(self, hook: Hook, app: App, facts: Facts) -> HookOutcome:
        return HookOutcome.proceed()


def values_of(answer: Values | dict[str, Any]) -> Values:
    """What `overrides` returned, as `Values`; anything else is `Failed`."""
    if isinstance(answer, Values):
        return answer
    if isinstance(answer, dict):
        return Values(answer)
    raise Failed(f"overrides returned {type(answer).__name__}, not Values or a dict")
