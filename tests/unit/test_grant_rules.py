"""Rules of explicit grants as stories: given these commands, when this command, then these events or
this rejection (with its stable code, and nothing written).

Everything runs on eventsourcing's in-memory store (no I/O).
"""
from __future__ import annotations

import pytest

from domain.catalog import Catalog
from domain.errors import DuplicateGrant, InvalidPattern, RetiredAlias, UnknownGrant, UnknownSubject, UnknownTool
from tests.unit.conftest import META, rejected, spec, spring_voyage_story, types

@pytest.fixture
def catalog() -> Catalog:
    return spring_voyage_story()


# --- grants -------------------------------------------------------------------------------------------------


def test_when_the_first_grant_is_added_then_the_grants_are_opened_and_added_in_one_batch(catalog: Catalog) -> None:
    first = catalog.add_grant("agent:scout", "web.search", META)
    second = catalog.add_grant("agent:scout", "arxiv.*", META)
    revoke = catalog.revoke_grant("agent:scout", "arxiv.*", META)

    assert types(first) == ["Grants.Opened", "Grants.Added"]
    assert types(second) == ["Grants.Added"]
    assert types(revoke) == ["Grants.Revoked"]
    added = catalog.history(after=first.position - 1, limit=1)[0]
    assert added.state["subject"] == "agent:scout"
    assert added.state["target"] == "web.search"
    assert added.state["tool_key"] == str(catalog.canonical_tool("web.search").id)
    pattern = catalog.history(after=second.position - 1, limit=1)[0]
    assert (pattern.state["target"], pattern.state["tool_key"]) == ("arxiv.*", None)


def test_given_a_grant_when_added_again_then_duplicate_grant(catalog: Catalog) -> None:
    catalog.add_grant("unit:org", "web.search", META)
    catalog.add_grant("unit:org", "arxiv.*", META)
    with rejected(catalog, DuplicateGrant, "duplicate_grant"):
        catalog.add_grant("unit:org", "web.search", META)
    with rejected(catalog, DuplicateGrant, "duplicate_grant"):
        catalog.add_grant("unit:org", "arxiv.*", META)
    # the same tool on another subject is another grant
    assert types(catalog.add_grant("unit:research", "web.search", META)) == ["Grants.Opened", "Grants.Added"]


def test_given_a_grant_when_the_same_tool_is_granted_through_an_alias_then_duplicate_grant(
        catalog: Catalog) -> None:
    catalog.add_alias("web.search", "web_search", False, META)
    catalog.add_grant("agent:scout", "web.search", META)
    with rejected(catalog, DuplicateGrant, "duplicate_grant"):
        catalog.add_grant("agent:scout", "web_search", META)


def test_given_no_such_grant_when_revoked_then_unknown_grant(catalog: Catalog) -> None:
    with rejected(catalog, UnknownGrant, "unknown_grant"):
        catalog.revoke_grant("agent:scout", "web.search", META)
    catalog.add_grant("agent:scout", "web.search", META)
    with rejected(catalog, UnknownGrant, "unknown_grant") as info:
        catalog.revoke_grant("agent:scout", "arxiv.search", META)
    assert info.value.details["grants"] == ["web.search"]
    with rejected(catalog, UnknownGrant, "unknown_grant"):
        catalog.revoke_grant("agent:scout", "web.*", META)  # the tool was granted, not its namespace
    with rejected(catalog, UnknownGrant, "unknown_grant"):
        catalog.revoke_grant("agent:scout", "no.such", META)
    catalog.revoke_grant("agent:scout", "web.search", META)
    with rejected(catalog, UnknownGrant, "unknown_grant"):
        catalog.revoke_grant("agent:scout", "web.search", META)


def test_given_a_grant_when_revoked_through_an_alias_then_the_grant_is_revoked(catalog: Catalog) -> None:
    catalog.add_grant("agent:scout", "web.search", META)
    catalog.rename_tool("web.search", "web.find", META)

    result = catalog.revoke_grant("agent:scout", "web.search", META)

    assert types(result) == ["Grants.Revoked"]
    assert catalog.history(after=result.position - 1, limit=1)[0].state["target"] == "web.search"


@pytest.mark.parametrize("subject", ["unit:nowhere", "agent:nobody", "unit:scout", "agent:org"])
def test_given_an_unknown_subject_when_granted_or_revoked_then_unknown_subject(catalog: Catalog,
                                                                              subject: str) -> None:
    with rejected(catalog, UnknownSubject, "unknown_subject"):
        catalog.add_grant(subject, "web.search", META)
    with rejected(catalog, UnknownSubject, "unknown_subject"):
        catalog.revoke_grant(subject, "web.search", META)


@pytest.mark.parametrize("pattern", ["*", "arxiv*", "Arxiv.*", "arxiv.**", ".*", "arxiv..*", "ar xiv.*",
                                     "arxiv.s*"])
def test_given_a_bad_namespace_pattern_when_granted_then_invalid_pattern(catalog: Catalog, pattern: str) -> None:
    with rejected(catalog, InvalidPattern, "invalid_pattern"):
        catalog.add_grant("unit:org", pattern, META)


@pytest.mark.parametrize("pattern", ["arxiv.*", "sv.*", "acme.notes.*", "not-yet.*"])
def test_given_a_namespace_pattern_when_granted_then_it_need_not_name_any_tool_yet(catalog: Catalog,
                                                                                  pattern: str) -> None:
    assert types(catalog.add_grant("unit:org", pattern, META))[-1] == "Grants.Added"


def test_given_an_unknown_tool_when_granted_then_unknown_tool(catalog: Catalog) -> None:
    with rejected(catalog, UnknownTool, "unknown_tool"):
        catalog.add_grant("unit:org", "no.such", META)


@pytest.fixture
def retired(catalog: Catalog) -> Catalog:
    """`web_fetch` is a retired alias of `web.fetch` (the deprecation window walked in full)."""
    catalog.publish_release("1.0.0", META)
    catalog.register_tool("web.fetch", spec(), META)
    catalog.add_alias("web.fetch", "web_fetch", False, META)
    catalog.deprecate_alias("web_fetch", META)
    catalog.publish_release("1.1.0", META)
    for milestone in ("canonical_shipped", "docs_shipped", "data_rewrite_shipped"):
        catalog.record_milestone("web_fetch", milestone, "1.1.0", "done", META)
    catalog.publish_release("1.2.0", META)
    catalog.record_milestone("web_fetch", "alias_only_emission", "1.2.0", "done", META)
    catalog.record_step("web_fetch", 1, "documented", META)
    catalog.record_step("web_fetch", 2, "migrated", META)
    catalog.publish_release("1.3.0", META)
    catalog.retire_alias("web_fetch", "1.3.0", META)
    return catalog


def test_given_a_retired_alias_when_granted_then_retired_alias(retired: Catalog) -> None:
    with rejected(retired, RetiredAlias, "retired_alias") as info:
        retired.add_grant("unit:org", "web_fetch", META)
    assert info.value.details["canonical_id"] == "web.fetch"


def test_given_a_retired_alias_when_allowlisted_then_retired_alias(retired: Catalog) -> None:
    with rejected(retired, RetiredAlias, "retired_alias"):
        retired.set_allowlist("scout", ["web.search", "web_fetch"], META)


def test_given_a_live_alias_when_granted_then_the_grant_names_the_canonical_id(catalog: Catalog) -> None:
    catalog.add_alias("web.search", "web_search", False, META)
    result = catalog.add_grant("agent:scout", "web_search", META)
    assert catalog.history(after=result.position - 1, limit=1)[0].state["target"] == "web.search"
