"""Schema compatibility of tool input schemas: which changes each mode refuses, naming the property."""
from __future__ import annotations

import pytest

from domain.manifest import Manifest
from domain.plan_diff import plan_commands
from domain.schema_compat import breaking_changes

OLD = {"type": "object", "required": ["path"],
       "properties": {"path": {"type": "string"}, "mode": {"enum": ["r", "w"]}, "depth": {"type": "integer"}}}


def test_an_added_optional_property_is_backward_compatible() -> None:
    new = {**OLD, "properties": {**OLD["properties"], "follow": {"type": "boolean"}}}
    assert breaking_changes(OLD, new, "backward") == []


@pytest.mark.parametrize(("change", "named"), [
    ({"required": ["path", "depth"]}, "depth: newly required property"),
    ({"properties": {**OLD["properties"], "depth": {"type": "string"}}}, "depth: type narrowed"),
    ({"properties": {**OLD["properties"], "mode": {"enum": ["r"]}}}, "mode: enum value(s) removed: w"),
])
def test_a_breaking_change_under_backward_names_the_property(change: dict, named: str) -> None:
    [found] = breaking_changes(OLD, {**OLD, **change}, "backward")
    assert found.startswith("backward: " + named)


def test_forward_checks_the_other_way_full_both_and_none_nothing() -> None:
    loosened = {**OLD, "required": []}  # old calls stay valid; new calls may omit `path`
    assert breaking_changes(OLD, loosened, "backward") == []
    assert breaking_changes(OLD, loosened, "forward") == ["forward: path: newly required property"]
    assert breaking_changes(OLD, loosened, "full") == ["forward: path: newly required property"]
    assert breaking_changes(OLD, {"type": "string"}, "none") == []


def test_a_plan_reports_a_breaking_schema_change_with_the_reason_naming_the_property() -> None:
    tool = {"source": "builtin", "group": "core", "tier": "default", "visibility": "public"}
    current = Manifest.model_validate({"tools": {"read": tool | {"input_schema": OLD}}})
    desired = Manifest.model_validate({"compatibility": "backward", "tools": {
        "read": tool | {"input_schema": {**OLD, "required": ["path", "depth"]}}}})
    violations = plan_commands(desired, current, fresh=False).violations
    assert [(v.code, v.message) for v in violations][0] == (
        "incompatible_schema", "tool 'read': backward: depth: newly required property")


TOOL = {"source": "builtin", "group": "core", "tier": "default", "visibility": "public"}


def _plan(desired: dict, current: dict) -> tuple[list, list]:
    diff = plan_commands(Manifest.model_validate(desired), Manifest.model_validate(current), fresh=False)
    return [(c.argv, c.risk, c.inputs) for c in diff.commands], [(v.code, v.message) for v in diff.violations]


def test_a_compatible_schema_change_is_planned_as_tool_update() -> None:
    loosened = {**OLD, "required": []}
    commands, violations = _plan({"tools": {"read": TOOL | {"input_schema": loosened}}},
                                 {"compatibility": "backward", "tools": {"read": TOOL | {"input_schema": OLD}}})
    assert (commands, violations) == ([(["tool", "update", "read"], "safe_update", {"--schema": loosened})], [])


def test_a_manifest_naming_no_mode_is_planned_under_the_catalogs_mode() -> None:
    narrowed = {**OLD, "required": ["path", "depth"]}
    desired = {"tools": {"read": TOOL | {"input_schema": narrowed}}}
    _, violations = _plan(desired, {"compatibility": "forward", "tools": {"read": TOOL | {"input_schema": OLD}}})
    assert violations == []
    commands, violations = _plan(desired, {"compatibility": "full", "tools": {"read": TOOL | {"input_schema": OLD}}})
    assert commands == [] and violations[0][0] == "incompatible_schema"


def test_a_manifest_naming_another_mode_plans_it_first_and_its_changes_under_it() -> None:
    narrowed = {**OLD, "required": ["path", "depth"]}
    commands, violations = _plan({"compatibility": "none", "tools": {"read": TOOL | {"input_schema": narrowed}}},
                                 {"compatibility": "backward", "tools": {"read": TOOL | {"input_schema": OLD}}})
    assert violations == []
    assert [(argv, risk) for argv, risk, _ in commands] == [
        (["catalog", "compatibility", "none"], "safe_update"), (["tool", "update", "read"], "destructive_update")]


def test_an_invalid_new_schema_is_reported_by_the_metaschema_check() -> None:
    _, violations = _plan({"tools": {"read": TOOL | {"input_schema": {"type": 7}}}},
                          {"tools": {"read": TOOL | {"input_schema": OLD}}})
    assert violations[0][0] == "invalid_schema"
