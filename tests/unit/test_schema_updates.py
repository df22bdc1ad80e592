"""`tool update --schema` under the catalog's compatibility mode: stories of the domain, no I/O."""
from __future__ import annotations

import pytest

from domain.errors import IncompatibleSchema, InvalidSchema, UnknownTool, UsageError
from tests.unit.conftest import META, new_catalog, rejected, spec, types

V1 = {"type": "object", "required": ["path"],
      "properties": {"path": {"type": "string"}, "depth": {"type": "integer"}}}
DEPTH_REQUIRED = {**V1, "required": ["path", "depth"]}
PATH_OPTIONAL = {**V1, "required": []}


def catalog_with_read(mode: str | None = None):
    catalog = new_catalog()
    catalog.register_tool("read", spec(input_schema=V1), META)
    if mode is not None:
        catalog.set_compatibility(mode, META)
    return catalog


def test_given_no_mode_recorded_when_asked_then_the_catalog_is_backward() -> None:
    assert new_catalog().compatibility_mode() == "backward"


def test_given_backward_when_a_property_becomes_required_then_refused_naming_it_and_nothing_written() -> None:
    catalog = catalog_with_read()
    with rejected(catalog, IncompatibleSchema, "incompatible_schema") as refused:
        catalog.update_tool_schema("read", DEPTH_REQUIRED, META)
    assert "depth: newly required property" in str(refused.value)
    assert "backward" in str(refused.value)
    assert catalog.canonical_tool("read").spec.input_schema == V1


def test_given_backward_when_a_compatible_schema_is_given_then_it_is_the_next_version() -> None:
    catalog = catalog_with_read()
    result = catalog.update_tool_schema("read", PATH_OPTIONAL, META)
    assert types(result) == ["Tool.SchemaUpdated"]
    tool = catalog.canonical_tool("read")
    assert (tool.spec.input_schema, tool.schema_version) == (PATH_OPTIONAL, 2)


@pytest.mark.parametrize(("mode", "schema", "accepted"), [
    ("forward", DEPTH_REQUIRED, True), ("forward", PATH_OPTIONAL, False),
    ("full", DEPTH_REQUIRED, False), ("full", PATH_OPTIONAL, False),
    ("none", DEPTH_REQUIRED, True), ("none", {"type": "string"}, True),
])
def test_given_a_mode_when_the_schema_changes_then_the_mode_decides(mode: str, schema: dict,
                                                                     accepted: bool) -> None:
    catalog = catalog_with_read(mode)
    if accepted:
        assert types(catalog.update_tool_schema("read", schema, META)) == ["Tool.SchemaUpdated"]
    else:
        with rejected(catalog, IncompatibleSchema, "incompatible_schema") as refused:
            catalog.update_tool_schema("read", schema, META)
        assert f"compatibility mode {mode}" in str(refused.value)


def test_given_an_invalid_schema_when_updating_then_the_metaschema_refuses_it_first() -> None:
    catalog = catalog_with_read("none")
    with rejected(catalog, InvalidSchema, "invalid_schema") as refused:
        catalog.update_tool_schema("read", {"type": 7}, META)
    assert "/type" in str(refused.value)


def test_given_the_mode_when_set_again_or_to_the_default_then_nothing_is_written() -> None:
    catalog = new_catalog()
    assert catalog.set_compatibility("backward", META).events == []
    # a catalog's first write records the default naming policy on the way
    assert types(catalog.set_compatibility("full", META)) == ["Policy.Recorded", "Compatibility.Started"]
    assert catalog.set_compatibility("full", META).events == []
    assert types(catalog.set_compatibility("none", META)) == ["Compatibility.ModeSet"]
    assert catalog.compatibility_mode() == "none"


def test_given_an_unknown_mode_when_set_then_usage_error() -> None:
    catalog = new_catalog()
    with rejected(catalog, UsageError, "usage"):
        catalog.set_compatibility("sideways", META)


def test_given_a_tool_without_schema_when_one_is_added_under_backward_then_required_properties_are_refused() -> None:
    catalog = new_catalog()
    catalog.register_tool("read", spec(), META)
    with rejected(catalog, IncompatibleSchema, "incompatible_schema"):
        catalog.update_tool_schema("read", V1, META)
    assert types(catalog.update_tool_schema("read", {"properties": {"path": {"type": "string"}}}, META)) == \
        ["Tool.SchemaUpdated"]
    assert catalog.canonical_tool("read").schema_version == 1


def test_given_the_schema_in_force_when_given_again_then_nothing_is_written() -> None:
    catalog = catalog_with_read()
    assert catalog.update_tool_schema("read", V1, META).events == []
    assert catalog.canonical_tool("read").schema_version == 1


def test_given_an_unknown_or_alias_id_when_updating_then_unknown_tool() -> None:
    catalog = catalog_with_read()
    catalog.add_alias("read", "tool.fs.read", True, META)
    for tool_id in ("nope", "tool.fs.read"):
        with rejected(catalog, UnknownTool, "unknown_tool"):
            catalog.update_tool_schema(tool_id, V1, META)
