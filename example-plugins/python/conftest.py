"""Shared by the example plugins' tests: the vectors both SDKs must match."""

from pathlib import Path

import pytest

from capstan_plugin import canonical_json
from capstan_plugin.testing import load_facts, overrides

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "vectors"


def vector_cases(plugin: str) -> list[tuple[str, str, Path]]:
    """(facts name, chart, expected file) for every vector of `plugin`:
    files `vectors/PLUGIN/FACTS.CHART.json`."""
    cases = []
    for expected in sorted((VECTORS / plugin).glob("*.json")):
        facts, chart = expected.name.removesuffix(".json").split(".", 1)
        cases.append((facts, chart, expected))
    return cases


def check_vector(plugin_class, facts: str, chart: str, expected: Path) -> None:
    values = overrides(plugin_class, load_facts(VECTORS / "facts" / f"{facts}.json"), chart)
    assert canonical_json(values.to_dict(), pretty=True) + "\n" == expected.read_text(
        encoding="utf-8"
    )


@pytest.fixture
def vectors():
    return VECTORS
