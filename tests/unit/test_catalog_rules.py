"""Catalog rules as stories: given these commands, when this command, then these events or this error.

Everything runs on eventsourcing's in-memory store (no I/O). Alias and rename rules live in
test_catalog_aliases.py; releases and the deprecation window in test_catalog_window.py; idempotency and
concurrent writers in test_catalog_writes.py; stored formats and the history feed in test_stored_events.py.
"""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from domain.catalog import Catalog
from domain.errors import AliasConflict, DuplicateTool, InvalidId, PolicyAlreadySet, ReservedId, ReservedPrefix
from domain.naming import preset
from domain.schema_check import schema_problems
from tests.unit.conftest import META, new_catalog, rejected, spec, types

@pytest.fixture
def catalog() -> Catalog:
    return new_catalog()


# --- the naming policy ----------------------------------------------------------------------------


def test_given_uninitialised_catalog_when_first_tool_registered_then_tyrum_policy_recorded_in_same_batch(catalog):
    result = catalog.register_tool("memory.seed", spec(group="memory"), META)

    assert types(result)[0] == "Policy.Recorded"
    assert {"Tool.Registered", "Name.Claimed"} <= set(types(result))
    assert result.position == catalog.recorder.max_notification_id()
    assert catalog.policy() == preset("tyrum")


def test_given_uninitialised_catalog_when_first_write_is_a_release_then_tyrum_policy_recorded_in_same_batch(catalog):
    # "recorded once by init, or with the default on the first write" (domain/policy.py): publishing a
    # release is a write too, so the policy must be fixed by it and a later `init` with another preset
    # must be refused.
    result = catalog.publish_release("1.0.0", META)

    assert "Policy.Recorded" in types(result)


@pytest.mark.parametrize("first_write", ["init tyrum", "register a tool"])
def test_given_tyrum_policy_recorded_when_init_with_spring_voyage_then_policy_already_set(catalog, first_write):
    if first_write == "init tyrum":
        catalog.init(preset("tyrum"), META)
    else:
        catalog.register_tool("memory.seed", spec(group="memory"), META)

    with rejected(catalog, PolicyAlreadySet, "policy_already_set") as info:
        catalog.init(preset("spring-voyage"), META)
    assert info.value.details == {"current": "tyrum", "requested": "spring-voyage"}
    assert catalog.policy() == preset("tyrum")


def test_given_uninitialised_catalog_when_init_then_only_policy_recorded(catalog):
    result = catalog.init(preset("spring-voyage"), META)

    assert types(result) == ["Policy.Recorded"]
    assert catalog.policy() == preset("spring-voyage")


def test_given_policy_recorded_when_init_with_same_policy_again_then_nothing_written(catalog):
    catalog.init(preset("spring-voyage"), META)
    before = catalog.recorder.max_notification_id()

    result = catalog.init(preset("spring-voyage"), META)

    assert result.events == [] and result.position == catalog.recorder.max_notification_id()
    assert catalog.recorder.max_notification_id() == before


def test_given_initialised_catalog_when_first_tool_registered_then_policy_not_recorded_again(catalog):
    catalog.init(preset("tyrum"), META)

    result = catalog.register_tool("memory.seed", spec(group="memory"), META)

    assert "Policy.Recorded" not in types(result)


def test_given_spring_voyage_policy_when_registering_tyrum_style_hyphenated_id_then_invalid_id(catalog):
    catalog.init(preset("spring-voyage"), META)

    with rejected(catalog, InvalidId, "invalid_id"):
        catalog.register_tool("web-tools.fetch-page", spec(source="connector", group="extension"), META)
    # the same tool in the spring-voyage shape is fine
    assert "Tool.Registered" in types(
        catalog.register_tool("web_tools.fetch_page", spec(source="connector", group="extension"), META))


# --- register -------------------------------------------------------------------------------------


def test_given_nothing_when_registering_then_tool_registered_and_name_claimed(catalog):
    catalog.init(preset("tyrum"), META)

    result = catalog.register_tool("memory.seed", spec(group="memory"), META)

    assert types(result) == ["Tool.Registered", "Name.Claimed"]
    assert catalog.canonical_tool("memory.seed").tool_id == "memory.seed"


def test_given_registered_tool_when_registering_same_id_then_duplicate_tool(catalog):
    catalog.register_tool("memory.seed", spec(group="memory"), META)

    with rejected(catalog, DuplicateTool, "duplicate_tool") as info:
        catalog.register_tool("memory.seed", spec(group="memory"), META)
    assert info.value.exit_code == 3
    assert info.value.details["tool_id"] == "memory.seed"


def test_given_alias_of_another_tool_when_registering_that_id_then_alias_conflict(catalog):
    catalog.register_tool("memory.seed", spec(group="memory"), META)
    catalog.add_alias("memory.seed", "memory.plant", False, META)

    with rejected(catalog, AliasConflict, "alias_conflict") as info:
        catalog.register_tool("memory.plant", spec(group="memory"), META)
    assert info.value.details["canonical_id"] == "memory.seed"


def test_given_renamed_tool_when_registering_its_old_id_then_alias_conflict(catalog):
    catalog.register_tool("memory.seed", spec(group="memory"), META)
    catalog.rename_tool("memory.seed", "memory.plant", META)

    with rejected(catalog, AliasConflict, "alias_conflict") as info:
        catalog.register_tool("memory.seed", spec(group="memory"), META)
    assert info.value.details["lifecycle"] == "deprecated"


def test_given_plugin_tool_when_claiming_reserved_prefix_then_reserved_prefix(catalog):
    with rejected(catalog, ReservedPrefix, "reserved_prefix") as info:
        catalog.register_tool("memory.recall", spec(source="plugin", plugin="acme", group="extension"), META)
    assert info.value.details["prefix"] == "memory."


def test_given_plugin_tool_when_claiming_reserved_id_then_reserved_id(catalog):
    with rejected(catalog, ReservedId, "reserved_id"):
        catalog.register_tool("artifact.describe", spec(source="plugin", plugin="acme", group="extension"), META)


def test_given_builtin_tool_when_claiming_reserved_id_then_registered(catalog):
    result = catalog.register_tool("artifact.describe", spec(group="core"), META)

    assert "Tool.Registered" in types(result)


def test_a_plugin_tool_names_its_plugin_and_only_a_plugin_tool_names_one():
    with pytest.raises(ValidationError, match="a plugin tool names the plugin that owns it"):
        spec(source="plugin", group="extension")
    with pytest.raises(ValidationError, match="only a tool whose source is plugin names a plugin"):
        spec(source="builtin", plugin="acme")


def test_given_invalid_json_schema_when_registering_then_registered_with_schema_valid_false(catalog):
    broken = {"type": "strng", "properties": []}
    assert schema_problems(broken)  # the story's premise: this is not a usable JSON Schema

    result = catalog.register_tool("memory.seed", spec(group="memory", input_schema=broken), META)

    assert "Tool.Registered" in types(result)
    tool = catalog.canonical_tool("memory.seed")
    assert tool.spec.schema_valid is False
    assert tool.spec.input_schema == broken


@pytest.mark.parametrize("schema", [None, {"type": "object", "properties": {"path": {"type": "string"}}}])
def test_given_valid_or_no_schema_when_registering_then_schema_valid_true(catalog, schema):
    catalog.register_tool("memory.seed", spec(group="memory", input_schema=schema), META)

    assert catalog.canonical_tool("memory.seed").spec.schema_valid is True


def test_given_operator_claims_schema_valid_when_registering_invalid_schema_then_catalog_judges_it(catalog):
    catalog.register_tool("memory.seed", spec(group="memory", input_schema={"type": 7}, schema_valid=True), META)

    assert catalog.canonical_tool("memory.seed").spec.schema_valid is False


@pytest.mark.parametrize(("tool_id", "source", "family"), [
    ("memory.seed", "builtin", "memory"),
    ("read", "builtin", "standalone"),
    ("mcp.github.create_issue", "mcp", "mcp"),
    ("workboard.task.create", "builtin", "workboard.task"),
])
def test_given_no_family_when_registering_then_family_defaults(catalog, tool_id, source, family):
    catalog.register_tool(tool_id, spec(source=source), META)

    assert catalog.canonical_tool(tool_id).spec.family == family


def test_given_explicit_family_when_registering_then_family_kept(catalog):
    catalog.register_tool("memory.seed", spec(family="seeding"), META)

    assert catalog.canonical_tool("memory.seed").spec.family == "seeding"
