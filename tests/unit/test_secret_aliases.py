"""Rule 21 (ARCH-19's secret reference contract), the write side: an agent-scoped `secret_alias`, unique in
its scope, naming a secret reference that exists; an optional `display_name`, operator-safe text. One story
per rule, in the style of test_seed_rules.py. (Resolution inside the agent's allowlist reads the read model:
tests/e2e/test_secret_aliases_cli.py.)"""
from __future__ import annotations

import pytest

from domain.catalog import Catalog
from domain.errors import InvalidText, UnknownSubject, UsageError
from domain.naming import preset
from domain.route_errors import DuplicateSecretAlias, SecretValueRefused, UnknownSecretRef
from domain.secret_aliases import SecretAliases, secret_aliases_key
from tests.unit.conftest import META, new_catalog, rejected, spec, types

VALUE = "ghp_Pl4nt3dV4lu3xx"


@pytest.fixture
def clipboard() -> Catalog:
    """Given agents triage and scout, and the reference github-token allowed to the clipboard secret tool."""
    app = new_catalog()
    app.init(preset("tyrum"), META)
    app.register_tool("tool.secret.copy-to-node-clipboard", spec(group="node"), META)
    app.create_unit("eng", None, META)
    app.create_agent("triage", "eng", "stateful", META)
    app.create_agent("scout", "eng", "stateful", META)
    app.add_secret_ref("github-token", ["tool.secret.copy-to-node-clipboard"], META)
    return app


def test_rule_21_an_alias_is_recorded_in_its_agents_scope_with_its_display_name(clipboard):
    result = clipboard.add_secret_alias("agent:triage", "github", "github-token", "GitHub deploy token", META)

    assert types(result) == ["SecretAliases.Opened", "SecretAliases.AliasAdded"]
    book = clipboard.get_or_none(secret_aliases_key("triage"), SecretAliases)
    assert book.aliases["github"].document() == {"secret_alias": "github", "secret_ref_id": "github-token",
                                                 "display_name": "GitHub deploy token"}
    assert clipboard.get_or_none(secret_aliases_key("scout"), SecretAliases) is None


def test_rule_21_an_alias_is_unique_in_its_scope_but_another_agent_may_use_the_same_name(clipboard):
    clipboard.add_secret_alias("agent:triage", "github", "github-token", None, META)

    with rejected(clipboard, DuplicateSecretAlias, "duplicate_secret_alias") as info:
        clipboard.add_secret_alias("agent:triage", "github", "github-token", "again", META)
    assert info.value.details == {"agent": "triage", "secret_alias": "github", "secret_ref_id": "github-token"}
    assert types(clipboard.add_secret_alias("agent:scout", "github", "github-token", None, META)) == [
        "SecretAliases.Opened", "SecretAliases.AliasAdded"]


def test_rule_21_an_alias_names_a_known_reference_of_a_known_agent(clipboard):
    with rejected(clipboard, UnknownSecretRef, "unknown_secret_ref"):
        clipboard.add_secret_alias("agent:triage", "github", "vault:kv/github", None, META)
    with rejected(clipboard, UnknownSubject, "unknown_subject"):
        clipboard.add_secret_alias("agent:nobody", "github", "github-token", None, META)
    with rejected(clipboard, UsageError, "usage"):
        clipboard.add_secret_alias("unit:eng", "github", "github-token", None, META)


def test_rule_21_an_alias_that_may_be_a_value_is_refused_without_being_repeated(clipboard):
    with rejected(clipboard, SecretValueRefused, "secret_value_refused") as info:
        clipboard.add_secret_alias("agent:triage", VALUE, "github-token", None, META)
    assert VALUE not in info.value.message and VALUE not in str(info.value.details)


def test_rule_21_a_display_name_is_one_line_of_safe_text(clipboard):
    with rejected(clipboard, InvalidText, "invalid_text"):
        clipboard.add_secret_alias("agent:triage", "github", "github-token", "two\nlines", META)
    with rejected(clipboard, InvalidText, "invalid_text"):
        clipboard.add_secret_alias("agent:triage", "github", "github-token", "x" * 129, META)
    with rejected(clipboard, InvalidText, "invalid_text"):
        clipboard.add_secret_alias("agent:triage", "github", "github-token", "  ", META)
