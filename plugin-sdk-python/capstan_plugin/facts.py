"""Typed facts about the platform, as a plugin sees them.

These mirror the WIT `facts` record (`wit/v0.1/plugin.wit`, contract 0.1.0) with
plain Python types: a dict for a node's labels, a parsed JSON value for
`extra`. `Facts.from_dict` reads the camelCase form the operator writes
(what `capstan plugin run --facts` reads), so a test can load the same
fixture file the host does. Helpers answer the questions plugins ask most:
is this a simplex system, which storage backend is there, which nodes
play a role.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any, Iterator


class SystemMode(enum.Enum):
    """How the platform's control plane is laid out."""

    SIMPLEX = "simplex"
    DUPLEX = "duplex"
    STANDARD = "standard"


class NodeRole(enum.Enum):
    """A role a node plays."""

    CONTROLLER = "controller"
    WORKER = "worker"
    STORAGE = "storage"


class StorageKind(enum.Enum):
    """The kind of a storage backend."""

    CEPH = "ceph"
    CEPH_ROOK = "ceph-rook"
    LVM = "lvm"
    NFS = "nfs"
    EXTERNAL = "external"


@dataclass
class Node:
    """One node of the cluster."""

    name: str
    roles: list[NodeRole] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    schedulable: bool = True

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Node:
        return Node(
            name=_str(data, "name"),
            roles=[NodeRole(r) for r in data.get("roles", [])],
            labels={str(k): str(v) for k, v in (data.get("labels") or {}).items()},
            schedulable=bool(data.get("schedulable", True)),
        )


@dataclass
class StorageBackend:
    """A storage backend the platform offers."""

    name: str
    kind: StorageKind
    replication: int = 1
    monitors: list[str] = field(default_factory=list)
    pools: list[str] = field(default_factory=list)
    is_default: bool = False

    @staticmethod
    def from_dict(data: dict[str, Any]) -> StorageBackend:
        return StorageBackend(
            name=_str(data, "name"),
            kind=StorageKind(_str(data, "kind")),
            replication=int(data.get("replication", 1)),
            monitors=[str(m) for m in data.get("monitors", [])],
            pools=[str(p) for p in data.get("pools", [])],
            is_default=bool(data.get("isDefault", False)),
        )


@dataclass
class LocalVolume:
    """A local volume this app's components mount, and where it lives."""

    name: str
    node: str
    host_path: str
    size: str
    storage_class: str

    @staticmethod
    def from_dict(data: dict[str, Any]) -> LocalVolume:
        return LocalVolume(
            name=_str(data, "name"),
            node=_str(data, "node"),
            host_path=_str(data, "hostPath"),
            size=_str(data, "size"),
            storage_class=_str(data, "storageClass"),
        )


@dataclass
class Facts:
    """What the host tells a plugin about the platform."""

    system_mode: SystemMode
    controller_count: int
    worker_count: int
    nodes: list[Node] = field(default_factory=list)
    storage_backends: list[StorageBackend] = field(default_factory=list)
    local_volumes: list[LocalVolume] = field(default_factory=list)
    kubernetes_version: str = "1.30.0"
    extra: Any = field(default_factory=dict)

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Facts:
        """Facts from their camelCase form (a parsed YAML or JSON fixture).

        Raises `ValueError` or `KeyError` when a required field is missing
        or a value is not one the contract knows.
        """
        return Facts(
            system_mode=SystemMode(_str(data, "systemMode")),
            controller_count=int(data["controllerCount"]),
            worker_count=int(data["workerCount"]),
            nodes=[Node.from_dict(n) for n in data.get("nodes") or []],
            storage_backends=[
                StorageBackend.from_dict(b) for b in data.get("storageBackends") or []
            ],
            local_volumes=[
                LocalVolume.from_dict(v) for v in data.get("localVolumes") or []
            ],
            kubernetes_version=str(data.get("kubernetesVersion", "")),
            extra=data.get("extra", {}),
        )

    @staticmethod
    def simplex() -> Facts:
        """A one-node simplex system with no storage backends, for tests."""
        return Facts(
            system_mode=SystemMode.SIMPLEX,
            controller_count=1,
            worker_count=1,
            nodes=[
                Node(
                    "controller-0",
                    [NodeRole.CONTROLLER, NodeRole.WORKER],
                    {"kubernetes.io/hostname": "controller-0"},
                )
            ],
        )

    @staticmethod
    def standard(controllers: int, workers: int) -> Facts:
        """A standard system with this many controllers and workers."""
        nodes = [_test_node(f"controller-{i}", NodeRole.CONTROLLER) for i in range(controllers)]
        nodes += [_test_node(f"worker-{i}", NodeRole.WORKER) for i in range(workers)]
        return replace(
            Facts.simplex(),
            system_mode=SystemMode.STANDARD,
            controller_count=controllers,
            worker_count=workers,
            nodes=nodes,
        )

    def with_backend(self, backend: StorageBackend) -> Facts:
        """A copy with `backend` added (builder style, for tests)."""
        return replace(self, storage_backends=[*self.storage_backends, backend])

    def is_simplex(self) -> bool:
        """True on a one-controller, all-in-one system."""
        return self.system_mode is SystemMode.SIMPLEX

    def backend(self, kind: StorageKind) -> StorageBackend | None:
        """The first backend of the given kind, if any."""
        return next((b for b in self.storage_backends if b.kind is kind), None)

    def nodes_with_role(self, role: NodeRole) -> Iterator[Node]:
        """The nodes that play `role`."""
        return (n for n in self.nodes if role in n.roles)


@dataclass
class App:
    """The app a call is about."""

    name: str
    version: str


@dataclass
class VolumeTrait:
    """A persistent volume a component asks for, per container."""

    container: int
    storage_class_name: str
    size: str
    path: str


@dataclass
class Component:
    """A workload of an app that may run as a Deployment or a StatefulSet."""

    name: str
    chart: str
    workload: str
    volumes: list[VolumeTrait] = field(default_factory=list)
    local_volumes: list[str] = field(default_factory=list)


def _test_node(name: str, role: NodeRole) -> Node:
    return Node(name, [role], {"kubernetes.io/hostname": name})


def _str(data: dict[str, Any], key: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string, got {type(value).__name__}")
    return value
