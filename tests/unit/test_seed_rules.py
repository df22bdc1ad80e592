"""The naming, ownership and window rules of seeds 000 (ARCH-21), 002 (Spring Voyage tools) and 003
(ADR-0030), one story each: given a catalog, when a command breaks the rule, then it is refused with a
stable code (exit 3) and nothing is written. The naming-rules table of docs/operators.md lists them by number.

In-memory store only (no I/O). The read-side rules (6, 10's inventory, 12) are told in
tests/integration/test_seed_rules_read.py.
"""
from __future__ import annotations

import pytest

from domain import registry
from domain.catalog import Catalog
from domain.errors import (
    AliasConflict,
    InvalidId,
    InvalidPattern,
    InvalidText,
    LegacyId,
    LegacyReferences,
    NamespaceOwned,
    NotModelFacing,
    ReleaseOrder,
    ReservedPrefix,
    RiskRequired,
    ShimId,
    ShimTarget,
    WindowOpen,
)
from domain.grammar import ID_MAX, TEXT_MAX
from domain.naming import preset
from domain.nodes import NodeFacts, select_node
from domain.route_errors import CapabilityMirror, NotASecretTool, NotNodeBacked, SecretValueRefused
from domain.routing import ROUTE_RULES_KEY, RouteRules
from domain.secret_refs import SecretRef, secret_ref_key
from domain.window import MILESTONES, earliest_removal
from tests.unit.conftest import META, new_catalog, rejected, spec, spring_voyage_story, types


def plugin(name: str, **fields: object) -> object:
    return spec(source="plugin", group="extension", plugin=name, **fields)


@pytest.fixture
def tyrum() -> Catalog:
    """Given a Tyrum catalog with read, the websearch facade and plugin acme's acme.ticket.create."""
    app = new_catalog()
    app.init(preset("tyrum"), META)
    app.register_tool("read", spec(), META)
    app.register_tool("websearch", spec(source="builtin_mcp", group="retrieval"), META)
    app.register_tool("acme.ticket.create", plugin("acme"), META)
    return app


# --- rule 1: plugin, connector and image namespaces are owned (000, 002) -----------------------------


def test_rule_1_given_acme_owned_by_its_plugin_when_another_plugin_registers_there_then_namespace_owned(tyrum):
    with rejected(tyrum, NamespaceOwned, "namespace_owned") as info:
        tyrum.register_tool("acme.ticket.close", plugin("rival"), META)
    assert info.value.details["owner"] == "plugin:acme"


def test_rule_1_given_acme_owned_by_its_plugin_when_a_builtin_registers_there_then_namespace_owned(tyrum):
    with rejected(tyrum, NamespaceOwned, "namespace_owned"):
        tyrum.register_tool("acme.ticket.close", spec(), META)


def test_rule_1_given_acme_owned_when_its_own_plugin_registers_more_then_accepted(tyrum):
    assert "Tool.Registered" in types(tyrum.register_tool("acme.ticket.close", plugin("acme"), META))


def test_rule_1_given_a_plugin_tool_when_renamed_into_another_plugins_namespace_then_namespace_owned(tyrum):
    tyrum.register_tool("rival.ticket.open", plugin("rival"), META)

    with rejected(tyrum, NamespaceOwned, "namespace_owned"):
        tyrum.rename_tool("rival.ticket.open", "acme.ticket.open", META)


def test_rule_1_given_connector_namespace_when_another_connector_declares_tools_there_then_namespace_owned():
    app = spring_voyage_story()

    with rejected(app, NamespaceOwned, "namespace_owned") as info:
        app.register_connector("mirror", "arxiv", ["arxiv.mirror"], META)
    assert info.value.details["owner"] == "connector:arxiv"


def test_rule_1_given_image_publisher_namespace_when_another_publisher_declares_there_then_namespace_owned():
    app = spring_voyage_story()
    app.declare_image("scout", "acme/scout:1.0", ["acme.cite"], META)
    app.create_agent("rogue", "research", "stateful", META)

    with rejected(app, NamespaceOwned, "namespace_owned"):
        app.declare_image("rogue", "evil/rogue:1.0", ["acme.exfiltrate"], META)
    # the same publisher's other images keep to the namespace it owns
    assert types(app.declare_image("rogue", "acme/rogue:2.0", ["acme.summarize"], META))


# --- rule 2: no mcp.-prefixed aliases for the built-in MCP facades (000) ------------------------------


def test_rule_2_given_websearch_facade_when_adding_an_mcp_alias_then_reserved_prefix(tyrum):
    with rejected(tyrum, ReservedPrefix, "reserved_prefix") as info:
        tyrum.add_alias("websearch", "mcp.exa.web_search_exa", False, META)
    assert "facade" in info.value.message


# --- rule 3: a legacy ID never becomes canonical again (000) -------------------------------------------


def test_rule_3_given_renamed_tool_when_renamed_back_to_its_deprecated_id_then_legacy_id(tyrum):
    tyrum.rename_tool("acme.ticket.create", "acme.ticket.open", META)

    with rejected(tyrum, LegacyId, "legacy_id") as info:
        tyrum.rename_tool("acme.ticket.open", "acme.ticket.create", META)
    assert info.value.details == {"tool_id": "acme.ticket.create", "canonical_id": "acme.ticket.open",
                                  "lifecycle": "deprecated"}


def test_rule_3_given_an_alias_when_a_new_tool_is_registered_under_it_then_alias_conflict(tyrum):
    tyrum.rename_tool("acme.ticket.create", "acme.ticket.open", META)

    with rejected(tyrum, AliasConflict, "alias_conflict"):
        tyrum.register_tool("acme.ticket.create", plugin("acme"), META)


# --- rule 4: the legacy shims are never canonical (000) ------------------------------------------------


@pytest.mark.parametrize("shim", ["tool.fs.read", "tool.fs.write", "tool.exec", "tool.http.fetch", "tool.fs.*"])
def test_rule_4_given_tyrum_when_registering_a_shim_id_then_shim_id(tyrum, shim):
    with rejected(tyrum, ShimId, "shim_id"):
        tyrum.register_tool(shim, spec(), META)


def test_rule_4_given_tyrum_when_renaming_to_a_shim_id_then_shim_id_naming_what_it_stands_for(tyrum):
    tyrum.register_tool("tool.exec.run", spec(), META)

    with rejected(tyrum, ShimId, "shim_id") as info:
        tyrum.rename_tool("tool.exec.run", "tool.exec", META)
    assert info.value.details == {"tool_id": "tool.exec", "shim_of": "bash"}  # the CLI's hint names both


def test_rule_4_given_a_shim_recorded_by_alias_add_when_renaming_to_it_or_registering_it_then_shim_id():
    # A policy without the seed's shim table: the shims the catalog recorded are never canonical either.
    app = new_catalog()
    app.init(preset("spring-voyage"), META)
    app.register_tool("files.read", spec(), META)
    app.add_alias("files.read", "legacy.read", True, META)

    with rejected(app, ShimId, "shim_id"):
        app.rename_tool("files.read", "legacy.read", META)
    with rejected(app, ShimId, "shim_id"):
        app.register_tool("legacy.read", spec(), META)


# --- rule 5: window releases follow the canonical (000) -------------------------------------------------


@pytest.fixture
def renamed_in_1_0() -> Catalog:
    """Given 1.0.0 published, then mcp.memory.seed renamed to memory.seed (which ships in 1.1.0)."""
    app = new_catalog()
    app.register_tool("mcp.memory.seed", spec(source="mcp", group="memory"), META)
    app.publish_release("1.0.0", META)
    app.rename_tool("mcp.memory.seed", "memory.seed", META, source="builtin_mcp")
    return app


def test_rule_5_given_canonical_after_1_0_when_a_milestone_names_1_0_then_release_order(renamed_in_1_0):
    with rejected(renamed_in_1_0, ReleaseOrder, "release_order") as info:
        renamed_in_1_0.record_milestone("mcp.memory.seed", "canonical_shipped", "1.0.0", None, META)
    assert info.value.details["canonical_since"] == "1.0.0"


def test_rule_5_when_retiring_before_the_earliest_removal_then_window_open_naming_the_same_release(renamed_in_1_0):
    app = renamed_in_1_0
    app.publish_release("1.1.0", META)
    for name in MILESTONES:
        app.record_milestone("mcp.memory.seed", name, "1.1.0", None, META)
    app.record_step("mcp.memory.seed", 1, "docs", META)
    app.record_step("mcp.memory.seed", 2, "data", META)
    app.publish_release("1.1.1", META)

    with rejected(app, WindowOpen, "window_open") as info:
        app.retire_alias("mcp.memory.seed", "1.1.1", META)
    # what `audit alias` shows is what retirement enforces
    assert info.value.details["earliest"] == earliest_removal(dict.fromkeys(MILESTONES, "1.1.0"), "1.1.0") == "1.2.0"


def test_rule_5_earliest_removal_is_after_the_release_that_introduced_the_canonical():
    milestones = dict.fromkeys(MILESTONES, "1.0.0")

    assert earliest_removal(milestones) == "1.1.0"
    assert earliest_removal(milestones, "1.1.0") == "1.1.1"


# --- rule 7: moving into a platform family changes the provenance (000) ---------------------------------


def test_rule_7_given_raw_mcp_tool_when_renamed_into_memory_without_source_then_reserved_prefix():
    app = new_catalog()
    app.register_tool("mcp.memory.seed", spec(source="mcp", group="memory"), META)

    with rejected(app, ReservedPrefix, "reserved_prefix") as info:
        app.rename_tool("mcp.memory.seed", "memory.seed", META)
    assert info.value.details["allowed_sources"] == ["builtin", "builtin_mcp"]
    # what the CLI's hint pastes: toolcat tool rename mcp.memory.seed memory.seed --source builtin_mcp
    assert (info.value.details["old_id"], info.value.details["move_to"]) == ("mcp.memory.seed", "builtin_mcp")


def test_rule_7_when_renamed_with_source_then_the_event_records_the_new_source_and_family():
    app = new_catalog()
    app.register_tool("mcp.memory.seed", spec(source="mcp", group="memory"), META)

    result = app.rename_tool("mcp.memory.seed", "memory.seed", META, source="builtin_mcp")

    assert types(result) == ["Tool.Renamed", "Name.Claimed"]
    tool = app.canonical_tool("memory.seed")
    assert (tool.spec.source, tool.spec.family) == ("builtin_mcp", "memory")
    assert tool.aliases["mcp.memory.seed"].lifecycle == "deprecated"


def test_rule_7_given_a_v1_renamed_event_when_read_then_it_kept_the_source():
    stored_v1 = {"old_id": "a.b", "new_id": "a.c", "latest_release": None, "actor": "tester"}

    assert registry.upcast("Tool.Renamed", 1, stored_v1) == {**stored_v1, "source": None, "family": None}
    assert registry.current_version("Tool.Renamed") == 2


# --- rule 8: sv.* is the platform's (002) ----------------------------------------------------------------


def test_rule_8_given_spring_voyage_when_a_connector_declares_the_sv_namespace_then_reserved_prefix():
    app = spring_voyage_story()

    with rejected(app, ReservedPrefix, "reserved_prefix"):
        app.register_connector("shadow", "sv", ["sv.directory.list"], META)


def test_rule_8_given_spring_voyage_when_an_image_declares_a_new_sv_tool_then_reserved_prefix():
    app = spring_voyage_story()

    with rejected(app, ReservedPrefix, "reserved_prefix"):
        app.declare_image("scout", "acme/scout:1.0", ["sv.memory.forget"], META)


@pytest.mark.parametrize("tool_id", ["sv.directory", "sv.directory.peers.list"])
def test_rule_8_given_spring_voyage_when_a_platform_tool_is_not_sv_area_verb_then_invalid_id(tool_id):
    app = spring_voyage_story()

    with rejected(app, InvalidId, "invalid_id"):
        app.register_tool(tool_id, spec(), META)


# --- rule 9: verb_noun means verb first, and write verbs carry a risk (003) --------------------------------


@pytest.fixture
def verb_noun() -> Catalog:
    app = new_catalog()
    app.init(preset("verb-noun"), META)
    return app


def test_rule_9_given_verb_noun_when_the_name_does_not_start_with_a_verb_then_invalid_id(verb_noun):
    with rejected(verb_noun, InvalidId, "invalid_id") as info:
        verb_noun.register_tool("person_merge", spec(risk="safe_update"), META)
    assert "merge" in info.value.details["verbs"]


@pytest.mark.parametrize("risk", [None, "read_only"])
def test_rule_9_given_verb_noun_when_a_write_verb_has_no_write_risk_then_risk_required(verb_noun, risk):
    with rejected(verb_noun, RiskRequired, "risk_required"):
        verb_noun.register_tool("merge_people", spec(risk=risk), META)


def test_rule_9_given_verb_noun_when_a_read_verb_or_a_risked_write_then_accepted(verb_noun):
    assert types(verb_noun.register_tool("find_people_at_org", spec(), META))
    assert types(verb_noun.register_tool("merge_people", spec(risk="destructive_update"), META))


def test_rule_9_given_a_v1_recorded_preset_when_read_then_it_holds_the_presets_vocabulary():
    stored_v1 = {"policy": {"name": "verb-noun", "id_pattern": "x", "alias_pattern": "y"}}

    upcast = registry.upcast("Policy.Recorded", 1, stored_v1)

    assert upcast["policy"]["verbs"] == preset("verb-noun").verbs
    assert upcast["policy"]["id_pattern"] == "x"  # what was recorded stays as recorded
    assert registry.upcast("Policy.Recorded", 1, {"policy": {"name": "house"}}) == {"policy": {"name": "house"}}


# --- rule 10: runtime-only helpers are not model-facing (000) ----------------------------------------------


def test_rule_10_given_a_runtime_only_helper_when_granted_then_not_model_facing():
    app = spring_voyage_story()
    app.register_tool("web.normalize", spec().model_copy(update={"visibility": "runtime_only"}), META)

    with rejected(app, NotModelFacing, "not_model_facing"):
        app.add_grant("agent:scout", "web.normalize", META)


# --- rule 11: shim patterns in grants expand as an allowlist does (000) --------------------------------------


def test_rule_11_given_filesystem_builtins_when_granting_tool_fs_star_then_each_builtin_granted():
    app = new_catalog()
    for tool_id in ("read", "write", "grep"):
        app.register_tool(tool_id, spec(), META)
    app.create_unit("eng", None, META)

    result = app.add_grant("unit:eng", "tool.fs.*", META)

    assert types(result).count("Grants.Added") == 3


def test_rule_11_given_tool_fs_star_granted_when_revoked_then_each_grant_it_made_is_revoked():
    app = new_catalog()
    for tool_id in ("read", "grep"):
        app.register_tool(tool_id, spec(), META)
    app.create_unit("eng", None, META)
    app.add_grant("unit:eng", "tool.fs.*", META)

    assert types(app.revoke_grant("unit:eng", "tool.fs.*", META)) == ["Grants.Revoked"] * 2


def test_rule_11_when_granting_tool_star_then_invalid_pattern():
    app = new_catalog()
    app.register_tool("read", spec(), META)
    app.create_unit("eng", None, META)

    with rejected(app, InvalidPattern, "invalid_pattern"):
        app.add_grant("unit:eng", "tool.*", META)


# --- rule 13: bad input ----------------------------------------------------------------------------------


def test_rule_13_when_an_id_is_longer_than_its_limit_then_invalid_id(tyrum):
    with rejected(tyrum, InvalidId, "invalid_id"):
        tyrum.register_tool("acme." + "a" * ID_MAX, plugin("acme"), META)


def test_rule_13_when_evidence_is_longer_than_its_limit_then_invalid_text(renamed_in_1_0):
    renamed_in_1_0.publish_release("1.1.0", META)

    with rejected(renamed_in_1_0, InvalidText, "invalid_text"):
        renamed_in_1_0.record_milestone("mcp.memory.seed", "docs_shipped", "1.1.0", "x" * (TEXT_MAX + 1), META)


def test_rule_13_when_granting_a_malformed_pattern_then_invalid_id_not_unknown_tool(tyrum):
    tyrum.create_unit("eng", None, META)

    with rejected(tyrum, InvalidId, "invalid_id"):
        tyrum.add_grant("unit:eng", "Acme..ticket", META)



def test_rule_2_given_a_memory_family_helper_when_its_old_mcp_id_is_added_then_accepted():
    app = new_catalog()
    app.register_tool("memory.seed", spec(source="builtin_mcp", group="memory"), META)

    assert types(app.add_alias("memory.seed", "mcp.memory.seed", False, META)) == ["Tool.AliasAdded", "Name.Claimed"]


# === issue 30: the seed rules' third pass (rules 14-…; docs/operators.md numbers them) ===================


# --- rule 14: a documented shim stands for its own target, as a shim (000's compatibility envelope) -------


@pytest.mark.parametrize(("tool", "shim"), [("bash", "tool.fs.read"), ("read", "tool.exec")])
def test_rule_14_given_tyrum_when_a_shim_is_added_to_another_tool_then_shim_target(tyrum, tool, shim):
    tyrum.register_tool("bash", spec(), META)

    with rejected(tyrum, ShimTarget, "shim_target") as info:
        tyrum.add_alias(tool, shim, True, META)
    assert info.value.details["shim_of"] != tool
    assert f"toolcat alias add {info.value.details['shim_of']} {shim} --shim" in info.value.message


def test_rule_14_given_tyrum_when_a_documented_shim_is_added_as_a_plain_alias_then_shim_target(tyrum):
    with rejected(tyrum, ShimTarget, "shim_target") as info:
        tyrum.add_alias("read", "tool.fs.read", False, META)
    assert "--shim" in info.value.message


def test_rule_14_given_tyrum_when_a_shim_names_its_own_target_then_accepted(tyrum):
    assert types(tyrum.add_alias("read", "tool.fs.read", True, META)) == ["Tool.AliasAdded", "Name.Claimed"]


# --- rule 15: mcp. aliases only for raw MCP tools, whatever source a platform tool has (000) ----------------


@pytest.mark.parametrize(("tool", "alias"), [("websearch", "mcp.exa.web_search_exa"), ("bash", "mcp.shell.run"),
                                             ("workboard.item.list", "mcp.github.list_issues")])
def test_rule_15_given_builtin_platform_tools_when_adding_an_mcp_alias_then_reserved_prefix(tool, alias):
    app = new_catalog()
    app.init(preset("tyrum"), META)
    for tool_id in ("websearch", "bash", "workboard.item.list"):
        app.register_tool(tool_id, spec(), META)  # websearch registered as builtin, not builtin_mcp

    with rejected(app, ReservedPrefix, "reserved_prefix") as info:
        app.add_alias(tool, alias, False, META)
    assert info.value.details["allowed_sources"] == ["mcp"]


def test_rule_15_given_a_raw_mcp_tool_when_adding_an_mcp_alias_then_accepted(tyrum):
    tyrum.register_tool("mcp.exa.web_search_exa", spec(source="mcp", group="extension"), META)

    assert types(tyrum.add_alias("mcp.exa.web_search_exa", "mcp.exa.search", False, META))


# --- rule 16: internal tools are not model-facing either (000) ---------------------------------------------


def test_rule_16_given_an_internal_tool_when_granted_then_not_model_facing():
    app = spring_voyage_story()
    app.register_tool("web.index", spec().model_copy(update={"visibility": "internal"}), META)

    with rejected(app, NotModelFacing, "not_model_facing") as info:
        app.add_grant("unit:research", "web.index", META)
    assert info.value.details["visibility"] == "internal"


# --- rule 17: a secret reference may be named as secret managers name secrets (001) --------------------------


@pytest.fixture
def clipboard() -> Catalog:
    """Given a Tyrum catalog with read and the dedicated secret tool."""
    app = new_catalog()
    app.init(preset("tyrum"), META)
    app.register_tool("read", spec(), META)
    app.register_tool("tool.secret.copy-to-node-clipboard", spec(group="node"), META)
    return app


@pytest.mark.parametrize("ref", ["vault:github-token", "vault:kv/github", "op://vault/item/field",
                                 "arn:aws:secretsmanager:us-east-1:123456789012:secret:github-AbCdEf",
                                 "projects/acme/secrets/github/versions/latest", "env:GITHUB_TOKEN"])
def test_rule_17_when_a_reference_is_a_secret_managers_name_then_accepted(clipboard, ref):
    result = clipboard.add_secret_ref(ref, ["tool.secret.copy-to-node-clipboard"], META)

    assert types(result) == ["SecretRef.Added"]
    assert clipboard.get_or_none(secret_ref_key(ref), SecretRef).ref == ref


@pytest.mark.parametrize("ref", ["ghp_7Hq2ZxSECRETvalue", "vault:/k", "op://only/two", "env:GITHUB TOKEN",
                                 "arn:aws:s3:::bucket"])
def test_rule_17_when_a_reference_has_no_managers_shape_then_secret_value_refused_not_repeated(clipboard, ref):
    with rejected(clipboard, SecretValueRefused, "secret_value_refused") as info:
        clipboard.add_secret_ref(ref, ["tool.secret.copy-to-node-clipboard"], META)
    assert ref not in info.value.message + str(info.value.details)


# --- rule 18: a secret reference is for the dedicated secret tools (001) --------------------------------------


def test_rule_18_when_a_reference_allows_an_ordinary_tool_then_not_secret_tool(clipboard):
    with rejected(clipboard, NotASecretTool, "not_secret_tool") as info:
        clipboard.add_secret_ref("github-token", ["tool.secret.copy-to-node-clipboard", "read"], META)
    assert info.value.details == {"tool_id": "read", "entry": 2, "prefix": "tool.secret."}


# --- rule 19: only the node-backed tool.* families are routed to nodes (001, 000's family table) -------------


@pytest.mark.parametrize("tool_id", ["tool.automation.schedule.pause", "tool.location.place.create",
                                     "tool.node.capability.get"])
def test_rule_19_given_a_node_advertising_the_mirror_when_routing_an_environment_tool_then_not_node_backed(tool_id):
    capability = "tyrum." + tool_id.removeprefix("tool.")
    node = NodeFacts("desk", paired=True, ready=True, capabilities=[capability])

    with pytest.raises(NotNodeBacked) as info:
        select_node(tool_id, "key", [node])
    assert info.value.code == "not_node_backed" and info.value.exit_code == 3


def test_rule_19_given_tyrum_when_an_environment_tool_is_registered_in_the_node_group_then_capability_mirror(tyrum):
    with rejected(tyrum, CapabilityMirror, "capability_mirror") as info:
        tyrum.register_tool("tool.location.place.create", spec(group="node"), META)
    assert "--group environment" in info.value.message


def test_rule_19_the_node_backed_families_are_still_routed():
    node = NodeFacts("desk", paired=True, ready=True, capabilities=["tyrum.location.get"])

    assert select_node("tool.location.get", "key", [node])["node"] == "desk"


# --- rule 20: stored data is migrated to the canonical ID before removal step 2 (000's checklist) -------------


@pytest.fixture
def renamed_with_references(tyrum) -> Catalog:
    """Given acme.ticket.create named by an allowlist, a route rule and a secret reference, then renamed."""
    app = tyrum
    app.register_tool("tool.secret.copy-to-node-clipboard", spec(group="node"), META)
    app.create_unit("eng", None, META)
    app.create_agent("triage", "eng", "stateful", META)
    app.set_allowlist("triage", ["acme.ticket.create", "read"], META)
    app.add_route_rule({"rule_id": "no-tickets-after-read", "deny_tool": "acme.ticket.create",
                        "after_tool": "read"}, META)
    app.register_tool("tool.secret.paste", spec(group="node"), META)
    app.add_secret_ref("github-token", ["tool.secret.paste"], META)
    app.rename_tool("acme.ticket.create", "acme.ticket.open", META)
    app.rename_tool("tool.secret.paste", "tool.secret.copy-to-node-clipboard-2", META)
    for old_id in ("acme.ticket.create", "tool.secret.paste"):
        app.record_step(old_id, 1, "only the canonical ID is documented", META)
    return app


def test_rule_20_given_references_to_the_old_id_when_recording_step_2_then_legacy_references(renamed_with_references):
    app = renamed_with_references

    with rejected(app, LegacyReferences, "legacy_references") as info:
        app.record_step("acme.ticket.create", 2, "data migrated", META)
    assert info.value.details["references"] == [
        {"kind": "allowlist", "holder": "agent:triage"},
        {"kind": "route_rule", "holder": "route_rule:no-tickets-after-read", "side": "deny"}]
    assert "toolcat alias migrate acme.ticket.create" in info.value.message


def test_rule_20_when_migrated_then_each_holder_names_the_canonical_id_and_step_2_is_accepted(renamed_with_references):
    app = renamed_with_references

    result = app.migrate_alias("acme.ticket.create", META)

    assert types(result) == ["Agent.AllowlistSet", "RouteRules.RuleRewritten"]
    assert app.agent("triage").allowlist == ["acme.ticket.open", "read"]
    rule = app.get_or_none(ROUTE_RULES_KEY, RouteRules).rules["no-tickets-after-read"]
    assert (rule.deny_tool, rule.after_tool) == ("acme.ticket.open", "read")
    assert types(app.record_step("acme.ticket.create", 2, "data migrated", META)) == ["Tool.StepRecorded"]
    assert types(app.migrate_alias("acme.ticket.create", META)) == []  # nothing left: nothing written


def test_rule_20_a_secret_references_allowed_tool_is_migrated_too(renamed_with_references):
    app = renamed_with_references

    with rejected(app, LegacyReferences, "legacy_references") as info:
        app.record_step("tool.secret.paste", 2, "data migrated", META)
    assert info.value.details["references"] == [{"kind": "secret_ref", "holder": "secret_ref:github-token"}]
    assert types(app.migrate_alias("tool.secret.paste", META)) == ["SecretRef.ToolsRewritten"]
    assert list(app.get_or_none(secret_ref_key("github-token"), SecretRef).allowed.values()) == [
        "tool.secret.copy-to-node-clipboard-2"]


def test_rule_20_an_allowlist_naming_the_old_id_again_after_step_2_blocks_the_retirement(renamed_with_references):
    app = renamed_with_references
    app.migrate_alias("acme.ticket.create", META)
    app.record_step("acme.ticket.create", 2, "data migrated", META)
    app.set_allowlist("triage", ["acme.ticket.create"], META)  # named again: retiring would disable it silently
    app.publish_release("1.0.0", META)

    with rejected(app, LegacyReferences, "legacy_references") as info:
        app.retire_alias("acme.ticket.create", "1.0.0", META)
    assert info.value.details["references"] == [{"kind": "allowlist", "holder": "agent:triage"}]
    assert "before retiring it" in info.value.message
