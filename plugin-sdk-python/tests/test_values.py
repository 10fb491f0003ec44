import pytest

from capstan_plugin import Values, canonical_json


def test_set_builds_maps_on_dotted_paths_and_writes_what_the_rust_sdk_writes():
    values = Values().set("replicaCount", 2).set("image.tag", "1.2")
    # The Rust SDK's doc example: the same text.
    assert values.to_json() == '{"image":{"tag":"1.2"},"replicaCount":2}'


def test_set_replaces_what_is_not_a_map():
    values = Values().set("a", 1).set("a.b", 2)
    assert values.to_dict() == {"a": {"b": 2}}


def test_merge_merges_maps_deeply_and_replaces_the_rest():
    values = Values().set("a.b", 1).set("a.list", [1, 2])
    values.merge("", {"a": {"c": 2, "list": [3]}})
    values.merge("x.y", {"z": True})
    assert values.to_dict() == {"a": {"b": 1, "c": 2, "list": [3]}, "x": {"y": {"z": True}}}
    values.merge("", 5)
    assert values.get("a.c") == 2


def test_get_answers_none_for_missing_paths():
    assert Values().set("a.b", 1).get("a.b.c") is None
    assert Values().get("nothing") is None


def test_values_do_not_alias_what_they_were_given():
    shared = {"k": [1]}
    values = Values().set("a", shared)
    shared["k"].append(2)
    assert values.get("a") == {"k": [1]}


def test_canonical_json_sorts_keys_and_keeps_non_ascii():
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'
    assert canonical_json({"b": [], "a": {}}, pretty=True) == '{\n  "a": {},\n  "b": []\n}'


@pytest.mark.parametrize("bad", [None, 3, "text", [1]])
def test_overrides_must_return_values_or_a_dict(bad):
    from capstan_plugin import Failed
    from capstan_plugin.plugin import values_of

    with pytest.raises(Failed):
        values_of(bad)
