"""The plan's diff: from what the catalog holds to what a manifest declares, as commands with risk tags."""
from __future__ import annotations

from domain.manifest import Manifest
from domain.plan_diff import plan_commands


def manifest(**sections: object) -> Manifest:
    return Manifest.model_validate({"policy": "tyrum", **sections})


TOOL = {"source": "builtin", "group": "core", "tier": "default", "visibility": "public"}


def argvs(desired: Manifest, current: Manifest, fresh: bool = False) -> list[tuple[str, str]]:
    return [(" ".join(c.argv), c.risk) for c in plan_commands(desired, current, fresh).commands]


def test_a_manifest_equal_to_the_catalog_plans_nothing() -> None:
    same = manifest(tools={"read": TOOL}, units={"eng": {"grants": ["read"]}})
    diff = plan_commands(same, same, fresh=False)
    assert (diff.commands, diff.violations) == ([], [])


def test_an_empty_catalog_gets_its_policy_first_and_parents_before_children() -> None:
    desired = manifest(units={"papers": {"parent": "research"}, "research": {"parent": "acme"}, "acme": {}},
                       agents={"librarian": {"unit": "papers", "grants": ["read"]}}, tools={"read": TOOL})
    assert argvs(desired, manifest(), fresh=True) == [
        ("init --policy tyrum", "safe_create"),
        ("tool register read --source builtin --group core --tier default --visibility public", "safe_create"),
        ("unit create acme", "safe_create"),
        ("unit create research --parent acme", "safe_create"),
        ("unit create papers --parent research", "safe_create"),
        ("agent create librarian --unit papers", "safe_create"),
        ("grant add agent:librarian read", "safe_create")]


def test_taking_something_away_is_destructive() -> None:
    tools = {"read": TOOL, "gh.issue": TOOL | {"source": "connector"}}
    current = manifest(tools=tools, connectors={"gh": {"tools": ["gh.issue"]}},
                       units={"eng": {"connectors": ["gh"], "grants": ["read"]}},
                       agents={"triage": {"unit": "eng"}})
    desired = manifest(tools=tools, connectors={"gh": {"tools": ["gh.issue"]}}, units={"eng": {}},
                       agents={"triage": {"unit": "eng", "allowlist": ["read"]}})
    assert argvs(desired, current) == [("connector unbind gh --unit eng", "destructive_delete"),
                                       ("grant revoke unit:eng read", "destructive_delete"),
                                       ("agent allowlist triage read", "destructive_update")]


def test_what_no_command_does_is_a_violation() -> None:
    current = manifest(tools={"read": TOOL, "grep": TOOL}, units={"eng": {}})
    desired = manifest(tools={"read": TOOL | {"tier": "advanced"}})
    diff = plan_commands(desired, current, fresh=False)
    assert diff.commands == []
    assert [v.code for v in diff.violations] == ["unsupported_change"] * 3
    assert "'grep'" in diff.violations[0].message and "tier" in diff.violations[1].message


def test_a_deprecation_window_is_planned_in_order_and_the_retirement_last() -> None:
    alias = {"lifecycle": "retired", "retired_release": "1.2.0", "steps": {1: "docs", 2: "data", 5: "examples"},
             "milestones": {m: {"release": "1.1.0"} for m in ("canonical_shipped", "docs_shipped",
                                                               "data_rewrite_shipped", "alias_only_emission")}}
    desired = manifest(tools={"memory.search": TOOL | {"aliases": {"mcp.memory.search": alias}}},
                       agents={"triage": {"unit": "eng", "allowlist": ["mcp.memory.search"]}}, units={"eng": {}})
    commands = [c for c, _ in argvs(desired, manifest(), fresh=True)]
    assert commands.index("alias deprecate mcp.memory.search") < commands.index(
        "alias milestone mcp.memory.search canonical_shipped --release 1.1.0")
    assert commands[-3:] == ["agent allowlist triage mcp.memory.search",
                             "alias retire mcp.memory.search --release 1.2.0",
                             "alias step mcp.memory.search 5 --evidence examples"]


def test_a_schema_travels_as_the_file_options_content() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    planned = plan_commands(manifest(tools={"read": TOOL | {"input_schema": schema}}), manifest(), fresh=False)
    assert planned.commands[0].inputs == {"--schema": schema}


def test_connector_and_image_tools_left_out_of_the_tools_section_are_implied() -> None:
    current = manifest(tools={"gh.issue": {"source": "connector", "group": "extension", "tier": "advanced",
                                           "visibility": "public"}},
                       connectors={"gh": {"tools": ["gh.issue"]}})
    desired = manifest(connectors={"gh": {"tools": ["gh.issue"]}}, units={"eng": {}},
                       agents={"triage": {"unit": "eng", "image": {"ref": "acme/triage:1", "tools": ["img.a"]}}})
    assert argvs(desired, current) == [
        ("tool register img.a --source image --group extension --tier advanced --visibility public", "safe_create"),
        ("unit create eng", "safe_create"), ("agent create triage --unit eng", "safe_create"),
        ("image declare triage --image acme/triage:1 --tool img.a", "safe_create")]
