"""Rules of subjects, connectors and grants as stories: given these commands, when this command, then
these events or this rejection (with its stable code, and nothing written).

Everything runs on eventsourcing's in-memory store (no I/O).
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from domain.base import Meta
from domain.catalog import Catalog
from domain.errors import (
    AlreadyBound,
    CatalogRuleError,
    DuplicateConnector,
    DuplicateGrant,
    DuplicateSubject,
    InvalidName,
    InvalidPattern,
    NotBound,
    RetiredAlias,
    UnknownConnector,
    UnknownGrant,
    UnknownSubject,
    UnknownTool,
)
from domain.naming import preset
from domain.values import ToolSpec

META = Meta(actor="tester")


def new_catalog() -> Catalog:
    return Catalog(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


def spec(source: str = "builtin", group: str = "core", **fields: Any) -> ToolSpec:
    return ToolSpec(source=source, group=group, tier="default", visibility="public", **fields)


def types(result: Any) -> list[str]:
    return [event.type for event in result.events]


@contextmanager
def rejected(catalog: Catalog, error: type[CatalogRuleError], code: str) -> Iterator[Any]:
    """The command raises `error` with `code` (exit 3), and nothing at all is written."""
    before = catalog.recorder.max_notification_id()
    with pytest.raises(error) as info:
        yield info
    assert info.value.code == code
    assert info.value.exit_code == 3
    assert catalog.recorder.max_notification_id() == before


@pytest.fixture
def catalog() -> Catalog:
    """A Spring-Voyage catalog with unit `org` > `research`, agent `scout` in research, tool `web.search`
    and connector `arxiv` (arxiv.search, arxiv.fetch)."""
    app = new_catalog()
    app.init(preset("spring-voyage"), META)
    app.create_unit("org", None, META)
    app.create_unit("research", "org", META)
    app.create_agent("scout", "research", "stateful", META)
    app.register_tool("web.search", spec(), META)
    app.register_connector("arxiv", None, ["arxiv.search", "arxiv.fetch"], META)
    return app


# --- units and agents ---------------------------------------------------------------------------------


def test_given_a_unit_when_created_again_then_duplicate_subject(catalog: Catalog) -> None:
    with rejected(catalog, DuplicateSubject, "duplicate_subject") as info:
        catalog.create_unit("org", None, META)
    assert info.value.details == {"subject": "unit:org"}
    with rejected(catalog, DuplicateSubject, "duplicate_subject"):
        catalog.create_unit("research", None, META)  # a different parent does not make it new


def test_given_an_agent_when_created_again_then_duplicate_subject(catalog: Catalog) -> None:
    with rejected(catalog, DuplicateSubject, "duplicate_subject") as info:
        catalog.create_agent("scout", "org", "stateless", META)
    assert info.value.details == {"subject": "agent:scout"}


def test_given_a_unit_and_an_agent_may_share_a_name(catalog: Catalog) -> None:
    assert types(catalog.create_agent("org", "org", "stateful", META)) == ["Agent.Created"]


def test_given_no_such_unit_when_an_agent_is_created_in_it_then_unknown_subject(catalog: Catalog) -> None:
    with rejected(catalog, UnknownSubject, "unknown_subject") as info:
        catalog.create_agent("rover", "nowhere", "stateful", META)
    assert info.value.details == {"subject": "unit:nowhere"}


def test_given_no_such_parent_when_a_unit_is_created_under_it_then_unknown_subject(catalog: Catalog) -> None:
    with rejected(catalog, UnknownSubject, "unknown_subject") as info:
        catalog.create_unit("lab", "nowhere", META)
    assert info.value.details == {"subject": "unit:nowhere"}


def test_an_agent_is_not_a_parent_unit(catalog: Catalog) -> None:
    with rejected(catalog, UnknownSubject, "unknown_subject"):
        catalog.create_unit("lab", "scout", META)
    with rejected(catalog, UnknownSubject, "unknown_subject"):
        catalog.create_agent("rover", "scout", "stateful", META)


@pytest.mark.parametrize("name", ["Org", "with space", "-lead", ".dot", "", "a" * 129, "under/slash", "ünit"])
def test_given_a_bad_name_when_a_subject_or_connector_is_created_then_invalid_name(catalog: Catalog,
                                                                                    name: str) -> None:
    with rejected(catalog, InvalidName, "invalid_name"):
        catalog.create_unit(name, None, META)
    with rejected(catalog, InvalidName, "invalid_name"):
        catalog.create_agent(name, "org", "stateful", META)
    with rejected(catalog, InvalidName, "invalid_name"):
        catalog.register_connector(name, "ext", ["ext.tool"], META)


@pytest.mark.parametrize("name", ["a", "0team", "team-1", "team_1", "team.eu", "a" * 128])
def test_given_a_good_name_when_a_unit_is_created_then_unit_created(catalog: Catalog, name: str) -> None:
    assert types(catalog.create_unit(name, "org", META)) == ["Unit.Created"]


def test_when_a_unit_and_an_agent_are_created_then_their_events_say_where_they_live(catalog: Catalog) -> None:
    unit = catalog.create_unit("lab", "research", META)
    agent = catalog.create_agent("rover", "lab", "stateless", META)
    assert types(unit) == ["Unit.Created"]
    assert types(agent) == ["Agent.Created"]
    assert catalog.unit("lab").parent == "research"
    assert (catalog.agent("rover").unit, catalog.agent("rover").state_mode) == ("lab", "stateless")


# --- connectors -------------------------------------------------------------------------------------------


def test_given_a_connector_when_registered_again_then_duplicate_connector(catalog: Catalog) -> None:
    with rejected(catalog, DuplicateConnector, "duplicate_connector") as info:
        catalog.register_connector("arxiv", None, ["arxiv.search"], META)
    assert info.value.details == {"connector": "arxiv"}


@pytest.mark.parametrize("tools", [["gh.issue", "web.fetch"], ["ghx.issue"], ["gh"], ["web.search"]])
def test_given_a_connector_tool_outside_its_namespace_when_registered_then_invalid_name(
        catalog: Catalog, tools: list[str]) -> None:
    with rejected(catalog, InvalidName, "invalid_name"):
        catalog.register_connector("gh", None, tools, META)


@pytest.mark.parametrize("namespace", ["GH", "gh.", ".gh", "g h", "1gh"])
def test_given_a_bad_connector_namespace_when_registered_then_invalid_name(catalog: Catalog,
                                                                          namespace: str) -> None:
    with rejected(catalog, InvalidName, "invalid_name"):
        catalog.register_connector("gh", namespace, ["gh.issue"], META)


def test_when_a_connector_is_registered_then_its_new_tools_are_registered_with_it(catalog: Catalog) -> None:
    result = catalog.register_connector("gh", "github", ["github.issue", "github.pr", "github.list"], META)

    assert types(result) == ["Tool.Registered", "Name.Claimed"] * 3 + ["Connector.Registered"]
    assert catalog.connector("gh").tools == ["github.issue", "github.pr", "github.list"]
    assert catalog.connector("gh").namespace == "github"
    assert catalog.canonical_tool("github.pr").spec.source == "connector"


def test_given_an_existing_tool_in_the_namespace_when_a_connector_declares_it_then_it_is_reused(
        catalog: Catalog) -> None:
    catalog.register_tool("github.issue", spec(), META)
    result = catalog.register_connector("gh", "github", ["github.issue"], META)
    assert types(result) == ["Connector.Registered"]
    assert catalog.canonical_tool("github.issue").spec.source == "builtin"


def test_given_a_tool_named_twice_when_a_connector_is_registered_then_it_is_registered_once(
        catalog: Catalog) -> None:
    """The connector keeps its tools once each (as an image does); repeating `--tool` is no conflict."""
    result = catalog.register_connector("gh", "github", ["github.issue", "github.pr", "github.issue"], META)

    assert types(result) == ["Tool.Registered", "Name.Claimed", "Tool.Registered", "Name.Claimed",
                             "Connector.Registered"]
    assert catalog.connector("gh").tools == ["github.issue", "github.pr"]


def test_given_a_tool_named_twice_when_an_image_is_declared_then_it_is_registered_once(catalog: Catalog) -> None:
    result = catalog.declare_image("scout", "registry/scout:1", ["img.alpha", "img.alpha"], META)
    assert types(result) == ["Tool.Registered", "Name.Claimed", "Agent.ImageDeclared"]
    assert catalog.agent("scout").image_tools == ["img.alpha"]


def test_given_an_unknown_connector_when_bound_or_unbound_then_unknown_connector(catalog: Catalog) -> None:
    with rejected(catalog, UnknownConnector, "unknown_connector") as info:
        catalog.bind_connector("nosuch", "org", META)
    assert info.value.details == {"connector": "nosuch"}
    with rejected(catalog, UnknownConnector, "unknown_connector"):
        catalog.unbind_connector("nosuch", "org", META)


def test_given_an_unknown_unit_when_bound_then_unknown_subject(catalog: Catalog) -> None:
    with rejected(catalog, UnknownSubject, "unknown_subject"):
        catalog.bind_connector("arxiv", "nowhere", META)
    with rejected(catalog, UnknownSubject, "unknown_subject"):
        catalog.bind_connector("arxiv", "scout", META)  # an agent is not a unit


def test_given_a_bound_connector_when_bound_again_then_already_bound(catalog: Catalog) -> None:
    catalog.bind_connector("arxiv", "org", META)
    with rejected(catalog, AlreadyBound, "already_bound") as info:
        catalog.bind_connector("arxiv", "org", META)
    assert info.value.details == {"connector": "arxiv", "unit": "org"}
    # bound to another unit is a separate binding
    assert types(catalog.bind_connector("arxiv", "research", META)) == ["Unit.ConnectorBound"]


def test_given_an_unbound_connector_when_unbound_then_not_bound(catalog: Catalog) -> None:
    with rejected(catalog, NotBound, "not_bound") as info:
        catalog.unbind_connector("arxiv", "org", META)
    assert info.value.details == {"connector": "arxiv", "unit": "org"}
    catalog.bind_connector("arxiv", "org", META)
    with rejected(catalog, NotBound, "not_bound"):
        catalog.unbind_connector("arxiv", "research", META)  # bound to the parent, not to research


def test_when_bound_unbound_and_rebound_then_each_writes_one_unit_event(catalog: Catalog) -> None:
    bind = catalog.bind_connector("arxiv", "org", META)
    unbind = catalog.unbind_connector("arxiv", "org", META)
    rebind = catalog.bind_connector("arxiv", "org", META)

    assert types(bind) == ["Unit.ConnectorBound"]
    assert types(unbind) == ["Unit.ConnectorUnbound"]
    assert types(rebind) == ["Unit.ConnectorBound"]
    assert bind.position < unbind.position < rebind.position == catalog.recorder.max_notification_id()
    assert catalog.unit("org").bindings == {"arxiv"}
    stored = catalog.history(after=bind.position - 1, limit=10)
    assert [(r.topic.rpartition(":")[2], r.state["unit"], r.state["slug"]) for r in stored] == [
        ("Unit.ConnectorBound", "org", "arxiv"), ("Unit.ConnectorUnbound", "org", "arxiv"),
        ("Unit.ConnectorBound", "org", "arxiv")]


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


# --- allowlists and images ------------------------------------------------------------------------------------


def test_given_an_unknown_id_when_allowlisted_then_unknown_tool(catalog: Catalog) -> None:
    with rejected(catalog, UnknownTool, "unknown_tool"):
        catalog.set_allowlist("scout", ["web.search", "no.such"], META)


def test_given_a_bad_pattern_when_allowlisted_then_invalid_pattern(catalog: Catalog) -> None:
    with rejected(catalog, InvalidPattern, "invalid_pattern"):
        catalog.set_allowlist("scout", ["Web.*"], META)


def test_given_an_unknown_agent_when_allowlisted_then_unknown_subject(catalog: Catalog) -> None:
    with rejected(catalog, UnknownSubject, "unknown_subject"):
        catalog.set_allowlist("nobody", ["web.search"], META)
    with rejected(catalog, UnknownSubject, "unknown_subject"):
        catalog.clear_allowlist("nobody", META)


def test_when_an_allowlist_is_set_and_cleared_then_agent_events_record_it(catalog: Catalog) -> None:
    result = catalog.set_allowlist("scout", ["web.search", "arxiv.*", "*", "web.search"], META)
    assert types(result) == ["Agent.AllowlistSet"]
    assert catalog.agent("scout").allowlist == ["web.search", "arxiv.*", "*"]
    assert types(catalog.clear_allowlist("scout", META)) == ["Agent.AllowlistCleared"]
    assert catalog.agent("scout").allowlist is None


def test_given_the_tyrum_pattern_shims_when_allowlisted_then_accepted() -> None:
    app = new_catalog()
    app.init(preset("tyrum"), META)
    app.create_unit("team", None, META)
    app.create_agent("a", "team", "stateful", META)
    assert types(app.set_allowlist("a", ["tool.fs.*", "tool.*"], META)) == ["Agent.AllowlistSet"]


def test_when_an_image_is_declared_then_new_image_tools_are_registered_with_it(catalog: Catalog) -> None:
    result = catalog.declare_image("scout", "registry/scout:1", ["img.alpha", "web.search"], META)

    assert types(result) == ["Tool.Registered", "Name.Claimed", "Agent.ImageDeclared"]
    assert catalog.canonical_tool("img.alpha").spec.source == "image"
    assert catalog.agent("scout").image_tools == ["img.alpha", "web.search"]


def test_given_an_unknown_agent_when_an_image_is_declared_then_unknown_subject(catalog: Catalog) -> None:
    with rejected(catalog, UnknownSubject, "unknown_subject"):
        catalog.declare_image("nobody", "registry/x:1", ["img.alpha"], META)
