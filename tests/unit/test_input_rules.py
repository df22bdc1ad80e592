"""Hostile input through every write as stories: given a catalog, when a command carries a value outside its
grammar or limit, then it is refused with a stable code and nothing is written (issues 13 and 17).

The grammars themselves are in test_grammar.py; here each use case is shown to check what it writes."""
from __future__ import annotations

import json
from typing import Any

import pytest

from domain.base import Meta
from domain.catalog import Catalog
from domain.errors import (
    InvalidId,
    InvalidName,
    InvalidPattern,
    InvalidPolicy,
    InvalidText,
    ReservedId,
    ReservedPrefix,
    UnknownTool,
    UsageError,
)
from domain.grants import SubjectGrants, grants_key
from domain.naming import NamingPolicy, preset
from domain.policy import CatalogPolicy
from domain.versions import InvalidVersion
from tests.unit.conftest import META, new_catalog, rejected, spec, types

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE


@pytest.fixture
def catalog() -> Catalog:
    """Given a tyrum catalog: release 1.0.0, tool `read` with deprecated shim `tool.fs.read`, unit `eng`,
    agent `triage`, plugin tool `acme.ticket.open`."""
    app = new_catalog()
    app.init(preset("tyrum"), META)
    app.publish_release("1.0.0", META)
    app.register_tool("read", spec(), META)
    app.add_alias("read", "tool.fs.read", True, META)
    app.deprecate_alias("tool.fs.read", META)
    app.register_tool("acme.ticket.open", spec(source="plugin", group="extension", plugin="acme"), META)
    app.create_unit("eng", None, META)
    app.create_agent("triage", "eng", "stateful", META)
    return app


# --- names ------------------------------------------------------------------------------------------------

# Units, agents and connectors: test_subject_rules.py (the names the issue found stored are among its cases).

@pytest.mark.parametrize("image", ["\x01", "a\x7fb", RLO, "../..", "*", ":", "acme/App:1", "app:" + "t" * 129])
def test_given_an_image_reference_outside_the_oci_grammar_when_declared_then_invalid_name(
        catalog: Catalog, image: str) -> None:
    with rejected(catalog, InvalidName, "invalid_name") as info:
        catalog.declare_image("triage", image, ["img.alpha"], META)
    assert info.value.details["kind"] == "image"


def test_given_an_oci_image_reference_with_registry_tag_and_digest_when_declared_then_recorded(
        catalog: Catalog) -> None:
    image = "ghcr.io:443/acme/triage:1.2@sha256:" + "0" * 64
    assert types(catalog.declare_image("triage", image, ["img.alpha"], META))[-1] == "Agent.ImageDeclared"
    assert catalog.agent("triage").image == image


@pytest.mark.parametrize(("field", "value"), [("family", "Acme"), ("plugin", "acme tools"),
                                              ("backing_server", "exa\u2066"), ("classes", ["sink:Network"])])
def test_given_a_tool_description_with_a_bad_name_when_registered_then_invalid_name(
        catalog: Catalog, field: str, value: Any) -> None:
    fields: dict[str, Any] = {"plugin": "acme", field: value} if field != "plugin" else {"plugin": value}
    with rejected(catalog, InvalidName, "invalid_name"):
        catalog.register_tool("acme.ticket.close", spec(source="plugin", group="extension", **fields), META)


@pytest.mark.parametrize("namespace", ["GH", "gh.", "null", "a" * 129])
def test_given_a_bad_connector_namespace_when_registered_then_invalid_name(catalog: Catalog, namespace: str) -> None:
    with rejected(catalog, InvalidName, "invalid_name") as info:
        catalog.register_connector("gh", namespace, ["gh.issue"], META)
    assert info.value.details["kind"] == "tool namespace"


# --- tool IDs, aliases, allowlist and grant entries ---------------------------------------------------------

@pytest.mark.parametrize("tool_id", ["acme." + "a" * 200, "acme.ti" + RLO + "cket", "acme.tícket", "acme.ticket\n"])
def test_given_an_id_outside_the_policy_or_the_limit_when_registered_renamed_or_aliased_then_invalid_id(
        catalog: Catalog, tool_id: str) -> None:
    plugin_tool = spec(source="plugin", group="extension", plugin="acme")
    with rejected(catalog, InvalidId, "invalid_id"):
        catalog.register_tool(tool_id, plugin_tool, META)
    with rejected(catalog, InvalidId, "invalid_id"):
        catalog.rename_tool("acme.ticket.open", tool_id, META)
    with rejected(catalog, InvalidId, "invalid_id"):
        catalog.add_alias("acme.ticket.open", tool_id, False, META)


@pytest.mark.parametrize("entry", ["Web Search", "tool..fs", "a" * 5000, "re" + RLO + "ad", "--json"])
def test_given_a_malformed_entry_when_allowlisted_or_granted_then_invalid_id_not_unknown_tool(
        catalog: Catalog, entry: str) -> None:
    with rejected(catalog, InvalidId, "invalid_id"):
        catalog.set_allowlist("triage", ["read", entry], META)
    with rejected(catalog, InvalidId, "invalid_id"):
        catalog.add_grant("agent:triage", entry, META)


@pytest.mark.parametrize("pattern", ["a" * 5000 + ".*", "ac" + RLO + "me.*", "acme*"])
def test_given_a_malformed_or_oversized_pattern_when_allowlisted_or_granted_then_invalid_pattern(
        catalog: Catalog, pattern: str) -> None:
    with rejected(catalog, InvalidPattern, "invalid_pattern"):
        catalog.set_allowlist("triage", [pattern], META)
    with rejected(catalog, InvalidPattern, "invalid_pattern"):
        catalog.add_grant("unit:eng", pattern, META)


def test_given_a_well_formed_id_that_names_nothing_when_granted_then_still_unknown_tool(catalog: Catalog) -> None:
    with rejected(catalog, UnknownTool, "unknown_tool"):
        catalog.add_grant("agent:triage", "acme.nothing", META)


def test_given_a_pattern_stored_before_the_limits_when_revoked_then_the_revoke_is_not_refused(
        catalog: Catalog) -> None:
    oversized = "a" * 300 + ".*"
    catalog.add_grant("unit:eng", "acme.*", META)  # opens the subject's grants
    stored = catalog.get_or_none(grants_key("unit:eng"), SubjectGrants)
    assert stored is not None
    stored.add(oversized, None, META)  # as an older toolcat let it be written, bypassing the grammar
    catalog.save(stored)
    assert types(catalog.revoke_grant("unit:eng", oversized, META)) == ["Grants.Revoked"]


# --- free text, actors, idempotency keys, versions ------------------------------------------------------------

@pytest.mark.parametrize("text", [f"approved {RLO}by ops", "ok\x1b[2J", "x" * 2001, "nul\x00"])
def test_given_text_with_a_control_or_bidi_character_or_too_long_when_written_then_invalid_text(
        catalog: Catalog, text: str) -> None:
    with rejected(catalog, InvalidText, "invalid_text"):
        catalog.register_tool("acme.ticket.close", spec(source="plugin", group="extension", plugin="acme",
                                                        description=text), META)
    with rejected(catalog, InvalidText, "invalid_text") as info:
        catalog.record_milestone("tool.fs.read", "docs_shipped", "1.0.0", text, META)
    assert info.value.details["field"] == "evidence"
    with rejected(catalog, InvalidText, "invalid_text"):
        catalog.record_step("tool.fs.read", 1, text, META)
    with rejected(catalog, InvalidText, "invalid_text") as info:
        catalog.create_unit("ops", None, Meta(actor="tester", reason=text))
    assert info.value.details["field"] == "reason"


@pytest.mark.parametrize("actor", ["alice\nbob", RLO + "ecila", "a" * 129])
def test_given_an_actor_with_a_line_break_or_bidi_character_when_writing_then_invalid_text(
        catalog: Catalog, actor: str) -> None:
    with rejected(catalog, InvalidText, "invalid_text") as info:
        catalog.create_unit("ops", None, Meta(actor=actor))
    assert info.value.details["field"] == "actor"


def test_given_multiline_evidence_when_recorded_then_kept_as_written(catalog: Catalog) -> None:
    evidence = "docs PR #12\n\tmerged by ops «ok»"
    catalog.record_step("tool.fs.read", 1, evidence, META)
    assert catalog.owner_of("tool.fs.read").aliases["tool.fs.read"].steps[1] == evidence


@pytest.mark.parametrize("key", ["--json", "k 1", "k" + RLO, "k" * 256])
def test_given_a_malformed_idempotency_key_when_writing_then_invalid_name(catalog: Catalog, key: str) -> None:
    with rejected(catalog, InvalidName, "invalid_name") as info:
        catalog.create_unit("ops", None, Meta(actor="tester", idempotency_key=key))
    assert info.value.details["kind"] == "idempotency_key"


def test_given_an_oversized_version_when_published_then_invalid_version(catalog: Catalog) -> None:
    with rejected(catalog, InvalidVersion, "invalid_version") as info:
        catalog.publish_release("2.0.0-" + "a" * 200, META)
    assert info.value.exit_code == 2  # invalid_version keeps the usage exit it always had


# --- naming policies ---------------------------------------------------------------------------------------

def test_given_a_policy_file_naming_an_id_with_a_bidi_character_when_recorded_then_invalid_policy() -> None:
    catalog = new_catalog()
    policy = preset("tyrum").model_copy(update={"name": "house", "reserved_ids": ["ad" + RLO + "min"]})
    with rejected(catalog, InvalidPolicy, "invalid_policy") as info:
        catalog.init(policy, META)
    assert "U+202E" in info.value.message


def test_given_a_policy_that_allows_non_ascii_ids_when_registering_then_letters_of_any_script_pass() -> None:
    catalog = new_catalog()
    policy = NamingPolicy(name="intl", id_pattern=r"^\w+(\.\w+)+$", alias_pattern=r"^\w+(\.\w+)*$",
                          non_ascii_ids=True)
    catalog.init(policy, META)
    assert types(catalog.register_tool("outil.lire", spec(), META)) == ["Tool.Registered", "Name.Claimed"]
    assert types(catalog.register_tool("outil.écrire", spec(), META)) == ["Tool.Registered", "Name.Claimed"]
    with rejected(catalog, InvalidId, "invalid_id"):
        catalog.register_tool("outil.é" + RLO + "crire", spec(), META)


def test_given_an_ascii_policy_when_a_pattern_would_match_letters_of_any_script_then_invalid_id() -> None:
    catalog = new_catalog()
    catalog.init(NamingPolicy(name="wide", id_pattern=r"^\w+(\.\w+)+$", alias_pattern=r"^\w+$"), META)
    with rejected(catalog, InvalidId, "invalid_id") as info:
        catalog.register_tool("outil.écrire", spec(), META)
    assert info.value.details["character"] == "U+00E9"


def test_the_recorded_form_of_a_policy_without_the_non_ascii_flag_is_unchanged() -> None:
    recorded = CatalogPolicy.record(preset("tyrum"), META).pending_events[0].policy
    assert "non_ascii_ids" not in recorded
    assert NamingPolicy.model_validate(recorded) == preset("tyrum")
    flagged = preset("tyrum").model_copy(update={"non_ascii_ids": True})
    assert json.loads(flagged.model_dump_json())["non_ascii_ids"] is True


@pytest.mark.parametrize("moment", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "x" * 5000])
def test_given_a_time_outside_the_years_utc_can_hold_when_a_grant_takes_effect_then_usage_error(
        catalog: Catalog, moment: str) -> None:
    with rejected(catalog, UsageError, "usage") as info:
        catalog.add_grant("agent:triage", "read", META, moment)
    assert len(info.value.message) < 300


def test_error_messages_name_tools_and_aliases_in_plain_english(catalog: Catalog) -> None:
    with rejected(catalog, ReservedPrefix, "reserved_prefix") as info:
        catalog.add_alias("acme.ticket.open", "memory.ticket", False, META)
    assert info.value.message.startswith("plugin aliases may not use the reserved prefix 'memory.'")
    with rejected(catalog, ReservedId, "reserved_id") as info:
        catalog.add_alias("acme.ticket.open", "bash", False, META)
    assert info.value.message.startswith("plugin aliases may not claim the reserved platform ID 'bash'; only "
                                         "builtin or builtin_mcp tools may;")
