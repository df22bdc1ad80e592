"""Alias and rename rules through the Catalog: given these commands, when this command, then these events or this error.

In-memory store only (no I/O).
"""
from __future__ import annotations

import pytest

from domain.catalog import Catalog
from domain.errors import (
    AliasConflict,
    AliasState,
    CatalogRuleError,
    DuplicateTool,
    InvalidId,
    LegacyId,
    NotAnAlias,
    ReservedId,
    ReservedPrefix,
    UnknownTool,
)
from domain.naming import preset
from tests.unit.conftest import META, new_catalog, rejected, spec, types


@pytest.fixture
def catalog() -> Catalog:
    """Given a catalog with two tools, memory.seed and memory.plant."""
    app = new_catalog()
    app.register_tool("memory.seed", spec(group="memory"), META)
    app.register_tool("memory.plant", spec(group="memory"), META)
    return app


# --- adding ---------------------------------------------------------------------------------------


def test_given_tool_when_adding_alias_then_alias_added_and_name_claimed(catalog):
    result = catalog.add_alias("memory.seed", "mcp.memory.seed", False, META)

    assert types(result) == ["Tool.AliasAdded", "Name.Claimed"]
    entry = catalog.canonical_tool("memory.seed").aliases["mcp.memory.seed"]
    assert (entry.lifecycle, entry.shim) == ("alias", False)
    assert catalog.owner_of("mcp.memory.seed").tool_id == "memory.seed"


def test_given_tool_when_adding_shim_then_shim_alias_added(catalog):
    catalog.register_tool("read", spec(group="core"), META)

    result = catalog.add_alias("read", "tool.fs.read", True, META)

    assert types(result) == ["Tool.AliasAdded", "Name.Claimed"]
    entry = catalog.canonical_tool("read").aliases["tool.fs.read"]
    assert (entry.lifecycle, entry.shim) == ("alias", True)


def test_given_legacy_underscore_alias_when_adding_then_accepted_by_lenient_alias_shape(catalog):
    result = catalog.add_alias("memory.seed", "memory_seed", False, META)

    assert "Tool.AliasAdded" in types(result)


def test_given_two_tools_when_alias_equals_a_canonical_id_then_alias_conflict(catalog):
    with rejected(catalog, AliasConflict, "alias_conflict") as info:
        catalog.add_alias("memory.seed", "memory.plant", False, META)
    assert info.value.details["canonical_id"] == "memory.plant"


def test_given_tool_when_alias_equals_its_own_canonical_id_then_alias_conflict(catalog):
    with rejected(catalog, AliasConflict, "alias_conflict"):
        catalog.add_alias("memory.seed", "memory.seed", False, META)


def test_given_alias_of_another_tool_when_adding_same_alias_then_alias_conflict(catalog):
    catalog.add_alias("memory.plant", "memory.sow", False, META)

    with rejected(catalog, AliasConflict, "alias_conflict") as info:
        catalog.add_alias("memory.seed", "memory.sow", False, META)
    assert info.value.details["canonical_id"] == "memory.plant"


def test_given_alias_when_adding_it_again_to_same_tool_then_alias_conflict(catalog):
    catalog.add_alias("memory.seed", "memory.sow", False, META)

    with rejected(catalog, AliasConflict, "alias_conflict"):
        catalog.add_alias("memory.seed", "memory.sow", True, META)


def test_given_alias_when_adding_alias_to_the_alias_then_unknown_tool(catalog):
    catalog.add_alias("memory.seed", "memory.sow", False, META)

    with rejected(catalog, UnknownTool, "unknown_tool") as info:
        catalog.add_alias("memory.sow", "memory.scatter", False, META)
    assert info.value.details["canonical_id"] == "memory.seed"


def test_given_nothing_when_adding_alias_to_unknown_tool_then_unknown_tool(catalog):
    with rejected(catalog, UnknownTool, "unknown_tool"):
        catalog.add_alias("memory.nothing", "memory.none", False, META)


def test_given_tool_when_alias_breaks_alias_shape_then_invalid_id(catalog):
    with rejected(catalog, InvalidId, "invalid_id"):
        catalog.add_alias("memory.seed", "Memory Seed", False, META)


def test_given_plugin_tool_when_alias_uses_reserved_prefix_then_reserved_prefix(catalog):
    catalog.register_tool("acme.recall", spec(source="plugin", plugin="acme", group="extension"), META)

    with rejected(catalog, ReservedPrefix, "reserved_prefix"):
        catalog.add_alias("acme.recall", "memory.recall", False, META)


def test_given_plugin_tool_when_alias_is_reserved_id_then_reserved_id(catalog):
    catalog.register_tool("acme.reader", spec(source="plugin", plugin="acme", group="extension"), META)

    with rejected(catalog, ReservedId, "reserved_id"):
        catalog.add_alias("acme.reader", "read", False, META)


# --- deprecating ----------------------------------------------------------------------------------


def test_given_alias_when_deprecated_then_alias_deprecated(catalog):
    catalog.add_alias("memory.seed", "mcp.memory.seed", False, META)

    result = catalog.deprecate_alias("mcp.memory.seed", META)

    assert types(result) == ["Tool.AliasDeprecated"]
    assert catalog.canonical_tool("memory.seed").aliases["mcp.memory.seed"].lifecycle == "deprecated"


def test_given_deprecated_alias_when_deprecated_again_then_alias_state(catalog):
    catalog.add_alias("memory.seed", "mcp.memory.seed", False, META)
    catalog.deprecate_alias("mcp.memory.seed", META)

    with rejected(catalog, AliasState, "alias_state") as info:
        catalog.deprecate_alias("mcp.memory.seed", META)
    assert info.value.details["lifecycle"] == "deprecated"


def test_given_renamed_tool_when_deprecating_its_old_id_then_alias_state(catalog):
    catalog.rename_tool("memory.seed", "memory.seedling", META)

    with rejected(catalog, AliasState, "alias_state"):
        catalog.deprecate_alias("memory.seed", META)


def test_given_tool_when_deprecating_its_canonical_id_then_not_an_alias(catalog):
    with rejected(catalog, NotAnAlias, "not_an_alias") as info:
        catalog.deprecate_alias("memory.seed", META)
    assert info.value.exit_code == 3


def test_given_nothing_when_deprecating_unknown_alias_then_unknown_tool(catalog):
    with rejected(catalog, UnknownTool, "unknown_tool"):
        catalog.deprecate_alias("memory.nothing", META)


@pytest.mark.parametrize("command", [
    lambda c: c.record_milestone("memory.nothing", "docs_shipped", "1.0.0", None, META),
    lambda c: c.record_step("memory.nothing", 1, "done", META),
    lambda c: c.retire_alias("memory.nothing", "1.0.0", META),
], ids=["milestone", "step", "retire"])
def test_given_nothing_when_alias_command_names_unknown_alias_then_unknown_tool(catalog, command):
    catalog.publish_release("1.0.0", META)

    with rejected(catalog, UnknownTool, "unknown_tool"):
        command(catalog)


@pytest.mark.parametrize("command", [
    lambda c: c.record_milestone("memory.seed", "docs_shipped", "1.0.0", None, META),
    lambda c: c.record_step("memory.seed", 1, "done", META),
    lambda c: c.retire_alias("memory.seed", "1.0.0", META),
], ids=["milestone", "step", "retire"])
def test_given_tool_when_alias_command_names_canonical_id_then_not_an_alias(catalog, command):
    catalog.publish_release("1.0.0", META)

    with rejected(catalog, NotAnAlias, "not_an_alias"):
        command(catalog)


def test_given_live_alias_when_recording_milestone_then_alias_state(catalog):
    catalog.publish_release("1.0.0", META)
    catalog.add_alias("memory.seed", "mcp.memory.seed", False, META)

    with rejected(catalog, AliasState, "alias_state"):
        catalog.record_milestone("mcp.memory.seed", "docs_shipped", "1.0.0", None, META)


def test_given_live_alias_when_recording_step_then_alias_state(catalog):
    catalog.add_alias("memory.seed", "mcp.memory.seed", False, META)

    with rejected(catalog, AliasState, "alias_state"):
        catalog.record_step("mcp.memory.seed", 1, "docs", META)


def test_given_live_alias_when_retiring_then_alias_state(catalog):
    catalog.publish_release("1.0.0", META)
    catalog.add_alias("memory.seed", "mcp.memory.seed", False, META)

    with rejected(catalog, AliasState, "alias_state"):
        catalog.retire_alias("mcp.memory.seed", "1.0.0", META)


# --- rename: the new ID becomes canonical, the old one a deprecated alias --------------------------


def test_given_tool_when_renamed_then_new_canonical_old_deprecated_alias_in_one_batch(catalog):
    key = catalog.canonical_tool("memory.seed").id

    result = catalog.rename_tool("memory.seed", "memory.seedling", META)

    assert types(result) == ["Tool.Renamed", "Name.Claimed"]
    assert result.position == catalog.recorder.max_notification_id()
    tool = catalog.canonical_tool("memory.seedling")
    assert tool.id == key
    assert tool.aliases["memory.seed"].lifecycle == "deprecated"
    assert catalog.owner_of("memory.seed").id == key


def test_given_two_tools_when_renaming_one_to_the_others_canonical_id_then_duplicate_tool(catalog):
    with rejected(catalog, DuplicateTool, "duplicate_tool") as info:
        catalog.rename_tool("memory.seed", "memory.plant", META)
    assert info.value.details["tool_id"] == "memory.plant"


def test_given_two_tools_when_renaming_one_to_the_others_alias_then_alias_conflict(catalog):
    catalog.add_alias("memory.plant", "memory.sow", False, META)

    with rejected(catalog, AliasConflict, "alias_conflict") as info:
        catalog.rename_tool("memory.seed", "memory.sow", META)
    assert info.value.details["canonical_id"] == "memory.plant"


def test_given_alias_when_renaming_the_alias_then_unknown_tool_pointing_at_canonical(catalog):
    catalog.add_alias("memory.seed", "memory.sow", False, META)

    with rejected(catalog, UnknownTool, "unknown_tool") as info:
        catalog.rename_tool("memory.sow", "memory.seedling", META)
    assert info.value.details["canonical_id"] == "memory.seed"


def test_given_nothing_when_renaming_unknown_tool_then_unknown_tool(catalog):
    with rejected(catalog, UnknownTool, "unknown_tool"):
        catalog.rename_tool("memory.nothing", "memory.something", META)


def test_given_tool_with_live_alias_when_renamed_to_that_alias_then_promoted_without_new_claim(catalog):
    catalog.add_alias("memory.seed", "memory.seedling", False, META)

    result = catalog.rename_tool("memory.seed", "memory.seedling", META)

    assert types(result) == ["Tool.Renamed"]
    tool = catalog.canonical_tool("memory.seedling")
    assert "memory.seedling" not in tool.aliases
    assert tool.aliases["memory.seed"].lifecycle == "deprecated"


def test_given_renamed_tool_when_renamed_back_then_legacy_id_and_nothing_written(catalog):
    # ARCH-21: a legacy public ID never becomes canonical again (tests/unit/test_seed_rules.py has the rest).
    catalog.rename_tool("memory.seed", "memory.seedling", META)

    with rejected(catalog, LegacyId, "legacy_id") as info:
        catalog.rename_tool("memory.seedling", "memory.seed", META)
    assert info.value.details["lifecycle"] == "deprecated"
    assert catalog.canonical_tool("memory.seedling").aliases["memory.seed"].lifecycle == "deprecated"


@pytest.mark.parametrize(("new_id", "error", "code"), [
    ("Memory.Seedling", InvalidId, "invalid_id"),
    ("seedling", InvalidId, "invalid_id"),
    ("mcp.memory.seedling", ReservedPrefix, "reserved_prefix"),
])
def test_given_tool_when_renamed_against_naming_policy_then_rejected(catalog, new_id, error, code):
    with rejected(catalog, error, code):
        catalog.rename_tool("memory.seed", new_id, META)


def test_given_spring_voyage_policy_when_renamed_to_hyphenated_id_then_invalid_id():
    app = new_catalog()
    app.init(preset("spring-voyage"), META)
    app.register_tool("web_tools.fetch", spec(source="connector", group="extension"), META)

    with rejected(app, InvalidId, "invalid_id"):
        app.rename_tool("web_tools.fetch", "web-tools.fetch", META)


def test_given_tool_when_renamed_to_its_own_canonical_id_then_rule_error(catalog):
    # Not a crash (exit 1): a rejection by a catalog rule (exit 3) that writes nothing.
    before = catalog.recorder.max_notification_id()

    with pytest.raises(CatalogRuleError) as info:
        catalog.rename_tool("memory.seed", "memory.seed", META)
    assert info.value.exit_code == 3
    assert catalog.recorder.max_notification_id() == before
