"""Storage plugin: values for the Ceph RBD and CephFS provisioner charts,
computed from the platform's storage backends.

The Python twin of `example-plugins/storage` (Rust): the same logic, the
same answers, checked against the same vectors
(`tests/fixtures/vectors/storage/`). Modelled on StarlingX's platform
override plugins for its RBD and CephFS provisioners: the monitors, pool and
replication come from the Ceph backend; on a one-controller (simplex)
system leader election is off and one provisioner replica runs; elsewhere
two replicas elect a leader and run on controllers only. The
`semantic-check` hook vetoes an apply on a platform with no Ceph backend.
"""

from capstan_plugin import (
    Facts,
    Hook,
    HookOutcome,
    InvalidFacts,
    Plugin,
    StorageBackend,
    StorageKind,
    Unsupported,
    Values,
    log,
)

RBD_CHART = "rbd-provisioner"
CEPHFS_CHART = "cephfs-provisioner"


class Storage(Plugin):
    name = "storage"
    version = "0.1.0"
    charts = [RBD_CHART, CEPHFS_CHART]
    hooks = [Hook.SEMANTIC_CHECK]

    def overrides(self, app, facts, chart):
        ceph = ceph_backend(facts)
        log.info(
            f"ceph backend {ceph.name} with {len(ceph.monitors)} monitor(s), "
            f"replication {ceph.replication}"
        )
        common = provisioner_values(facts, ceph)
        if chart == RBD_CHART:
            return common.merge("", rbd_values(ceph))
        if chart == CEPHFS_CHART:
            return common.merge("", cephfs_values(ceph))
        raise Unsupported(f"chart {chart}")

    def lifecycle(self, hook, app, facts):
        if hook is not Hook.SEMANTIC_CHECK:
            return HookOutcome.proceed()
        try:
            ceph_backend(facts)
        except InvalidFacts:
            return HookOutcome.veto(
                "this app needs a Ceph storage backend and the platform has none"
            )
        return HookOutcome.proceed()


def ceph_backend(facts: Facts) -> StorageBackend:
    backend = facts.backend(StorageKind.CEPH) or facts.backend(StorageKind.CEPH_ROOK)
    if backend is None:
        raise InvalidFacts("no ceph storage backend")
    return backend


def provisioner_values(facts: Facts, ceph: StorageBackend) -> Values:
    """Replica count, leader election and placement shared by both provisioners."""
    simplex = facts.is_simplex() or facts.controller_count < 2
    return (
        Values()
        .set("provisioner.replicaCount", 1 if simplex else 2)
        .set("provisioner.leaderElection.enabled", not simplex)
        .set("provisioner.nodeSelector", {"node-role.kubernetes.io/control-plane": ""})
        .set(
            "provisioner.tolerations",
            [
                {
                    "key": "node-role.kubernetes.io/control-plane",
                    "operator": "Exists",
                    "effect": "NoSchedule",
                }
            ],
        )
        .set("csiConfig.monitors", list(ceph.monitors))
        .set("csiConfig.clusterID", ceph.name)
    )


def rbd_values(ceph: StorageBackend) -> dict:
    pool = next((p for p in ceph.pools if "rbd" in p), None) or next(iter(ceph.pools), None)
    if pool is None:
        raise InvalidFacts(f"backend {ceph.name} has no pool")
    # Small placement-group chunks on a single-replica system keep OSD memory low.
    chunk_size = 8 if ceph.replication < 2 else 64
    return {
        "storageClass": {
            "name": "general",
            "isDefault": ceph.is_default,
            "pool": pool,
            "replication": ceph.replication,
            "chunkSize": chunk_size,
            "adminSecretName": "ceph-admin",
            "userSecretName": f"ceph-pool-{pool}",
        }
    }


def cephfs_values(ceph: StorageBackend) -> dict:
    return {
        "storageClass": {
            "name": "cephfs",
            "isDefault": False,
            "fsName": "kube-cephfs",
            "dataPool": "kube-cephfs-data",
            "metadataPool": "kube-cephfs-metadata",
            "replication": ceph.replication,
        }
    }
