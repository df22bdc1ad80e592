"""Naming policies: presets, canonical and alias checks, pattern shims, policies from JSON."""
from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from domain.errors import InvalidId, InvalidPolicy, ReservedId, ReservedPrefix
from domain.naming import PRESETS, NamingPolicy, policy_from_json, preset

TYRUM = preset("tyrum")
SPRING_VOYAGE = preset("spring-voyage")
VERB_NOUN = preset("verb-noun")

FILESYSTEM_BUILTINS = ["read", "write", "edit", "apply_patch", "glob", "grep"]
TYRUM_RESERVED_IDS = [*FILESYSTEM_BUILTINS, "bash", "websearch", "webfetch", "codesearch", "artifact.describe"]


def _raises(call, error_class, code):
    with pytest.raises(error_class) as caught:
        call()
    assert type(caught.value) is error_class
    assert caught.value.code == code
    return caught.value


# --- tyrum (ARCH-21) -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool_id", "source"),
    [
        *[(i, "builtin") for i in [*FILESYSTEM_BUILTINS, "bash", "artifact.describe"]],
        *[(i, "builtin_mcp") for i in ["websearch", "webfetch", "codesearch"]],
        *[(i, "builtin_mcp") for i in ["memory.seed", "memory.search", "memory.write"]],
        ("tool.location.place.create", "builtin"),
        ("tool.location.get", "builtin"),
        ("tool.automation.schedule.pause", "builtin"),
        ("tool.node.list", "builtin"),
        ("tool.node.capability.get", "builtin"),
        ("tool.desktop.wait-for", "builtin"),
        ("tool.browser.navigate", "builtin"),
        ("tool.camera.capture-photo", "builtin"),
        ("tool.audio.record", "builtin"),
        ("tool.secret.copy-to-node-clipboard", "builtin"),
        ("sandbox.handoff", "builtin"),
        ("subagent.spawn", "builtin"),
        ("workboard.capture", "builtin"),
        ("workboard.item.list", "builtin"),
        ("workboard.task.get", "builtin"),
        ("mcp.github.search", "mcp"),
        ("mcp.exa.web_search_exa", "mcp"),
        ("acme.deploy", "plugin"),
        ("acme.deploy.rollback-now", "plugin"),
    ],
)
def test_tyrum_accepts_shipped_canonical_ids(tool_id, source):
    # Given the tyrum policy, when a shipped canonical ID is registered by its source, then nothing is raised.
    TYRUM.check_tool_id(tool_id, source)


@pytest.mark.parametrize(
    ("tool_id", "source"),
    [
        ("Artifact.describe", "builtin"),
        ("acme.Deploy", "plugin"),
        ("acme.deploy_now", "plugin"),
        ("tool.fs.read_file", "builtin"),
        ("deploy", "plugin"),
        ("deploy", "builtin"),
        ("acme.deploy.", "plugin"),
        ("acme..deploy", "plugin"),
        (".acme.deploy", "plugin"),
        ("acme.1deploy", "plugin"),
        ("acme.-deploy", "plugin"),
        ("acme.deploy\n", "plugin"),
        ("", "plugin"),
        ("mcp.x", "mcp"),
        ("mcp.github", "mcp"),
        ("mcp.github.search.extra", "mcp"),
        ("mcp.Github.search", "mcp"),
        ("mcp.git_hub.search", "mcp"),
        ("mcp.github._search", "mcp"),
        ("github.search", "mcp"),
    ],
)
def test_tyrum_rejects_malformed_ids(tool_id, source):
    # Given the tyrum policy, when a malformed ID is registered, then it is an invalid_id naming the pattern.
    error = _raises(lambda: TYRUM.check_tool_id(tool_id, source), InvalidId, "invalid_id")
    assert error.details["tool_id"] == tool_id
    assert error.details["source"] == source
    assert error.details["pattern"]


def test_tyrum_invalid_id_message_lists_the_allowed_single_segment_ids():
    # Given an unlisted single-segment ID, when it is checked, then the message says what would be accepted.
    error = _raises(lambda: TYRUM.check_tool_id("deploy", "plugin"), InvalidId, "invalid_id")
    assert "'deploy'" in error.message
    assert "read, write" in error.message


@pytest.mark.parametrize("source", ["builtin", "builtin_mcp", "plugin", "connector", "image"])
def test_tyrum_mcp_prefix_is_only_for_raw_mcp_tools(source):
    # Given an mcp.-prefixed ID, when a non-mcp source registers it canonically, then the prefix is reserved.
    error = _raises(lambda: TYRUM.check_tool_id("mcp.memory.seed", source), ReservedPrefix, "reserved_prefix")
    assert error.details == {
        "tool_id": "mcp.memory.seed", "source": source, "prefix": "mcp.", "allowed_sources": ["mcp"],
    }


@pytest.mark.parametrize("tool_id", ["tool.acme.deploy", "memory.x", "sandbox.x", "subagent.x", "workboard.x", "mcp.acme.x"])
def test_tyrum_plugin_may_not_claim_a_reserved_prefix(tool_id):
    # Given a plugin tool, when it takes a reserved platform prefix, then it is a reserved_prefix error.
    error = _raises(lambda: TYRUM.check_tool_id(tool_id, "plugin"), ReservedPrefix, "reserved_prefix")
    prefix = tool_id.split(".")[0] + "."
    assert error.details["prefix"] == prefix
    assert f"plugin tools may not use the reserved prefix {prefix!r}" in error.message
    assert "plugin's own namespace" in error.message


@pytest.mark.parametrize("tool_id", TYRUM_RESERVED_IDS)
@pytest.mark.parametrize("source", ["plugin", "mcp", "connector", "image"])
def test_tyrum_non_platform_source_may_not_claim_a_reserved_exact_id(tool_id, source):
    # Given a reserved exact ID, when a non-platform source claims it, then it is a reserved_id error.
    error = _raises(lambda: TYRUM.check_tool_id(tool_id, source), ReservedId, "reserved_id")
    assert error.details["tool_id"] == tool_id
    assert error.details["source"] == source


def test_tyrum_reserved_id_is_checked_before_the_prefix_and_the_shape():
    # Given an ID that is reserved exactly and would also fail the shape, then reserved_id wins.
    _raises(lambda: TYRUM.check_tool_id("apply_patch", "plugin"), ReservedId, "reserved_id")
    # Given a reserved prefix on a malformed ID, then reserved_prefix wins over invalid_id.
    _raises(lambda: TYRUM.check_tool_id("memory.Bad_Name", "plugin"), ReservedPrefix, "reserved_prefix")


def test_tyrum_allowed_reserved_prefix_still_needs_the_shape():
    # Given builtin may use memory., when its ID is malformed, then it is still an invalid_id.
    _raises(lambda: TYRUM.check_tool_id("memory.Seed", "builtin"), InvalidId, "invalid_id")
    _raises(lambda: TYRUM.check_tool_id("memory.", "builtin"), InvalidId, "invalid_id")


# --- spring-voyage -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool_id", "source"),
    [
        ("arxiv.search", "connector"),
        ("arxiv.fetch_abstract", "connector"),
        ("websearch.query", "connector"),
        ("websearch.summarize", "connector"),
        ("acme.build_report", "image"),
        ("sv.directory.list", "builtin"),
        ("sv.memory.write", "builtin_mcp"),
    ],
)
def test_spring_voyage_accepts_namespaced_snake_case_ids(tool_id, source):
    # Given the spring-voyage policy, when a <namespace>.<tool_name> ID is registered, then nothing is raised.
    SPRING_VOYAGE.check_tool_id(tool_id, source)


@pytest.mark.parametrize(
    "tool_id", ["arxiv_search", "websearch_query", "Arxiv.search", "arxiv.fetch-abstract", "arxiv.", "arxiv/search", "1arxiv.search"]
)
def test_spring_voyage_rejects_non_canonical_ids(tool_id):
    # Given the spring-voyage policy, when a pre-canonical or malformed ID is registered, then it is invalid_id.
    _raises(lambda: SPRING_VOYAGE.check_tool_id(tool_id, "connector"), InvalidId, "invalid_id")


@pytest.mark.parametrize("source", ["connector", "image", "plugin", "mcp"])
def test_spring_voyage_sv_namespace_belongs_to_the_platform(source):
    # Given the sv namespace, when a non-platform source uses it, then it is a reserved_prefix error.
    error = _raises(lambda: SPRING_VOYAGE.check_tool_id("sv.x", source), ReservedPrefix, "reserved_prefix")
    assert error.details["prefix"] == "sv."


@pytest.mark.parametrize(("tool_id", "expected"), [("sv.directory.list", True), ("arxiv.search", False), ("svx.search", False)])
def test_spring_voyage_platform_tools_are_those_in_the_sv_namespace(tool_id, expected):
    # Given the spring-voyage policy, when asking whether a tool is a platform tool, then only sv.* are.
    assert SPRING_VOYAGE.is_platform_tool(tool_id) is expected


def test_tyrum_has_no_platform_namespace():
    assert TYRUM.is_platform_tool("tool.node.list") is False


# --- verb-noun (ADR-0030) ------------------------------------------------------------------------


@pytest.mark.parametrize("tool_id", ["list_people", "get_person", "find_people_at_org", "link_person_to_org", "merge_people", "add_note_to_person"])
def test_verb_noun_accepts_snake_case_verb_noun(tool_id):
    VERB_NOUN.check_tool_id(tool_id, "plugin")


@pytest.mark.parametrize("tool_id", ["people", "listPeople", "list.people", "list_people_", "_list_people", "list__people", "List_people", "list-people"])
def test_verb_noun_rejects_other_shapes(tool_id):
    _raises(lambda: VERB_NOUN.check_tool_id(tool_id, "plugin"), InvalidId, "invalid_id")


# --- aliases -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alias", "source"),
    [
        ("tool.fs.read", "builtin"),
        ("tool.exec", "builtin"),
        ("tool.http.fetch", "builtin_mcp"),
        ("mcp.memory.seed", "builtin_mcp"),
        ("mcp.memory.seed", "builtin"),
        ("mcp.github.search_code", "mcp"),
        ("acme_deploy", "plugin"),
    ],
)
def test_tyrum_accepts_legacy_alias_shapes(alias, source):
    # Given legacy and shim IDs, when registered as aliases of their source's tools, then nothing is raised.
    TYRUM.check_alias_id(alias, source)


@pytest.mark.parametrize("alias", ["arxiv_search", "websearch_query"])
def test_spring_voyage_accepts_pre_canonical_names_as_aliases(alias):
    SPRING_VOYAGE.check_alias_id(alias, "connector")


@pytest.mark.parametrize(("alias", "prefix"), [("memory.x", "memory."), ("tool.fs.read", "tool."), ("mcp.acme.x", "mcp.")])
def test_plugin_alias_may_not_take_a_reserved_prefix(alias, prefix):
    error = _raises(lambda: TYRUM.check_alias_id(alias, "plugin"), ReservedPrefix, "reserved_prefix")
    assert error.details["prefix"] == prefix


@pytest.mark.parametrize("alias", ["read", "bash", "artifact.describe"])
def test_plugin_alias_may_not_take_a_reserved_exact_id(alias):
    _raises(lambda: TYRUM.check_alias_id(alias, "plugin"), ReservedId, "reserved_id")


@pytest.mark.parametrize("alias", ["Tool.fs.read", "tool..read", "tool.fs.", "tool/fs/read", "tool.*", ""])
def test_malformed_alias_is_invalid_id(alias):
    error = _raises(lambda: TYRUM.check_alias_id(alias, "builtin"), InvalidId, "invalid_id")
    assert error.details["pattern"] == TYRUM.alias_pattern


# --- pattern shims -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "pattern", "expected"),
    [
        (TYRUM, "tool.*", ["*"]),
        (TYRUM, "tool.fs.*", FILESYSTEM_BUILTINS),
        (TYRUM, "tool.node.*", None),
        (TYRUM, "tool.fs.read", None),
        (SPRING_VOYAGE, "tool.*", None),
    ],
)
def test_expand_pattern_shim(policy, pattern, expected):
    assert policy.expand_pattern_shim(pattern) == expected


def test_expanding_a_shim_does_not_expose_the_policy_list():
    TYRUM.expand_pattern_shim("tool.fs.*").append("bash")
    assert TYRUM.expand_pattern_shim("tool.fs.*") == FILESYSTEM_BUILTINS


# --- presets and policies from JSON --------------------------------------------------------------


def test_presets_are_the_three_named_policies():
    assert sorted(PRESETS) == ["spring-voyage", "tyrum", "verb-noun"]
    assert all(PRESETS[name].name == name for name in PRESETS)


def test_unknown_preset_lists_the_known_ones():
    error = _raises(lambda: preset("kebab"), InvalidPolicy, "invalid_policy")
    assert "tyrum" in error.message and "spring-voyage" in error.message and "verb-noun" in error.message


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_policy_from_json_round_trips_a_preset(name):
    assert policy_from_json(preset(name).model_dump_json()) == preset(name)


def test_policy_is_frozen():
    with pytest.raises(ValidationError):
        TYRUM.name = "other"  # type: ignore[misc]


def _json(**changes):
    return json.dumps(preset("tyrum").model_dump() | changes)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{not json", "Invalid JSON"),
        ("[]", "should be an object"),
        (_json(extra_field=1), "extra_field"),
        (json.dumps({"name": "x", "alias_pattern": "^a$"}), "id_pattern"),
        (_json(id_pattern="("), "id_pattern"),
        (_json(alias_pattern="[a-"), "alias_pattern"),
        (_json(source_patterns={"mcp": "(?P<"}), "source_patterns['mcp']"),
        (_json(reserved_prefixes={"tool.": ["plugins"]}), "plugins"),
        (_json(platform_sources=["builtn"]), "builtn"),
        (_json(reserved_prefixes={"tool": ["builtin"]}), "'.'"),
        (_json(single_segment_ids="read"), "single_segment_ids"),
    ],
)
def test_policy_from_json_rejects_bad_documents(text, needle):
    # Given a bad policy document, when it is loaded, then it is an invalid_policy saying why.
    error = _raises(lambda: policy_from_json(text), InvalidPolicy, "invalid_policy")
    assert needle in error.message


def test_constructing_a_policy_with_a_bad_regex_is_invalid_policy():
    _raises(lambda: NamingPolicy(name="x", id_pattern="^a$", alias_pattern="("), InvalidPolicy, "invalid_policy")


def test_a_custom_policy_from_json_is_enforced():
    policy = policy_from_json(json.dumps({"name": "acme", "id_pattern": r"^acme\.[a-z]+$", "alias_pattern": "^[a-z.]+$",
                                          "reserved_ids": ["acme.root"]}))
    policy.check_tool_id("acme.deploy", "plugin")
    policy.check_tool_id("acme.root", "builtin")
    _raises(lambda: policy.check_tool_id("acme.root", "plugin"), ReservedId, "reserved_id")
    _raises(lambda: policy.check_tool_id("other.deploy", "plugin"), InvalidId, "invalid_id")
