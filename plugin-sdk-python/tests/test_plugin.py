import json
from pathlib import Path

import pytest

from capstan_plugin import (
    Component,
    Facts,
    Hook,
    NodeRole,
    Plugin,
    StorageKind,
    SystemMode,
    Unsupported,
    log,
)
from capstan_plugin.testing import lifecycle, load_facts, overrides, take_logs, workload_kind

ROOT = Path(__file__).resolve().parents[2]


class Quiet(Plugin):
    name = "quiet"


def test_the_defaults_say_not_served():
    with pytest.raises(Unsupported):
        overrides(Quiet, Facts.simplex(), "web")
    with pytest.raises(Unsupported):
        workload_kind(Quiet, Facts.simplex(), Component("c", "web", "Deployment/c"))
    assert not lifecycle(Quiet, Hook.PRE_APPLY, Facts.simplex()).vetoed


def test_facts_read_the_fixtures_the_host_reads():
    facts = load_facts(ROOT / "tests/fixtures/vectors/facts/standard.json")
    assert facts.system_mode is SystemMode.STANDARD
    assert [n.name for n in facts.nodes_with_role(NodeRole.CONTROLLER)] == [
        "controller-0",
        "controller-1",
    ]
    ceph = facts.backend(StorageKind.CEPH)
    assert ceph is not None and ceph.replication == 2 and ceph.is_default
    assert facts.backend(StorageKind.NFS) is None


def test_facts_refuse_what_the_contract_does_not_know(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"systemMode": "quadruplex", "controllerCount": 1, "workerCount": 1}))
    with pytest.raises(ValueError):
        load_facts(bad)
    bad.write_text("[]")
    with pytest.raises(ValueError):
        load_facts(bad)


def test_test_facts_match_the_rust_sdks():
    simplex = Facts.simplex()
    assert simplex.is_simplex() and simplex.controller_count == 1
    standard = Facts.standard(2, 3)
    assert not standard.is_simplex()
    assert [n.name for n in standard.nodes] == [
        "controller-0",
        "controller-1",
        "worker-0",
        "worker-1",
        "worker-2",
    ]


def test_log_lines_are_kept_for_tests_and_levels_are_checked():
    take_logs()
    log.info("hello")
    log.warn("careful")
    assert take_logs() == [("info", "hello"), ("warn", "careful")]
    with pytest.raises(ValueError):
        log.log("loud", "no such level")
