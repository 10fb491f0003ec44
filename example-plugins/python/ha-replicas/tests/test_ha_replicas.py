import dataclasses

import pytest
from conftest import check_vector, vector_cases

from capstan_plugin import Facts, InvalidFacts
from capstan_plugin.testing import overrides
from ha_replicas import MAX_REPLICAS, HaReplicas


@pytest.mark.parametrize("facts,chart,expected", vector_cases("ha-replicas"))
def test_matches_the_shared_vectors(facts, chart, expected):
    check_vector(HaReplicas, facts, chart, expected)


def test_simplex_runs_one_replica_without_a_budget():
    v = overrides(HaReplicas, Facts.simplex(), "web")
    assert v.get("replicaCount") == 1
    assert v.get("podDisruptionBudget.enabled") is False
    assert v.get("affinity") is None


def test_replicas_follow_controllers_up_to_three():
    two = overrides(HaReplicas, Facts.standard(2, 5), "api")
    assert two.get("replicaCount") == 2
    assert two.get("podDisruptionBudget.minAvailable") == 1
    rule = two.get("affinity")["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert rule[0]["topologyKey"] == "kubernetes.io/hostname"
    assert overrides(HaReplicas, Facts.standard(5, 5), "web").get("replicaCount") == MAX_REPLICAS


def test_inconsistent_controller_count_is_invalid_facts():
    facts = dataclasses.replace(Facts.standard(2, 1), controller_count=3)
    with pytest.raises(InvalidFacts):
        overrides(HaReplicas, facts, "web")
