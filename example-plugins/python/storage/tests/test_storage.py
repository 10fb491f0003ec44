import pytest
from conftest import check_vector, vector_cases

from capstan_plugin import (
    Facts,
    Hook,
    InvalidFacts,
    StorageBackend,
    StorageKind,
    Unsupported,
)
from capstan_plugin.testing import lifecycle, overrides, take_logs
from storage import RBD_CHART, Storage


def ceph(replication: int) -> StorageBackend:
    return StorageBackend(
        name="ceph-store",
        kind=StorageKind.CEPH,
        replication=replication,
        monitors=["192.168.204.2:6789"],
        pools=["kube-rbd"],
        is_default=True,
    )


@pytest.mark.parametrize("facts,chart,expected", vector_cases("storage"))
def test_matches_the_shared_vectors(facts, chart, expected):
    check_vector(Storage, facts, chart, expected)


def test_simplex_turns_leader_election_off_and_runs_one_replica():
    v = overrides(Storage, Facts.simplex().with_backend(ceph(1)), RBD_CHART)
    assert v.get("provisioner.leaderElection.enabled") is False
    assert v.get("provisioner.replicaCount") == 1
    assert v.get("storageClass.chunkSize") == 8
    assert v.get("storageClass.pool") == "kube-rbd"


def test_standard_elects_a_leader_among_two_replicas():
    take_logs()
    v = overrides(Storage, Facts.standard(2, 3).with_backend(ceph(2)), RBD_CHART)
    assert v.get("provisioner.leaderElection.enabled") is True
    assert v.get("provisioner.replicaCount") == 2
    assert any("ceph-store" in line for _, line in take_logs())


def test_no_ceph_backend_is_invalid_facts_and_a_veto():
    with pytest.raises(InvalidFacts):
        overrides(Storage, Facts.simplex(), RBD_CHART)
    assert lifecycle(Storage, Hook.SEMANTIC_CHECK, Facts.simplex()).vetoed


def test_unknown_chart_is_unsupported():
    with pytest.raises(Unsupported):
        overrides(Storage, Facts.simplex().with_backend(ceph(1)), "nginx")
