"""Rules of subjects, connectors, allowlists and images as stories: given these commands, when this command, then
these events or this rejection (with its stable code, and nothing written).

Everything runs on eventsourcing's in-memory store (no I/O). Explicit grants are in test_grant_rules.py.
"""
from __future__ import annotations

import pytest

from domain.catalog import Catalog
from domain.errors import (
    AlreadyBound,
    DuplicateConnector,
    DuplicateSubject,
    InvalidName,
    InvalidPattern,
    NotBound,
    UnknownConnector,
    UnknownSubject,
    UnknownTool,
    UsageError,
)
from domain.naming import preset
from domain.subjects import parse_effective_at
from tests.unit.conftest import META, new_catalog, rejected, spec, spring_voyage_story, types

@pytest.fixture
def catalog() -> Catalog:
    return spring_voyage_story()


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
    assert info.value.message == "no unit 'nowhere'"  # the interface says how to create it


def test_given_no_such_parent_when_a_unit_is_created_under_it_then_unknown_subject(catalog: Catalog) -> None:
    with rejected(catalog, UnknownSubject, "unknown_subject") as info:
        catalog.create_unit("lab", "nowhere", META)
    assert info.value.details == {"subject": "unit:nowhere"}


def test_an_agent_is_not_a_parent_unit(catalog: Catalog) -> None:
    with rejected(catalog, UnknownSubject, "unknown_subject"):
        catalog.create_unit("lab", "scout", META)
    with rejected(catalog, UnknownSubject, "unknown_subject"):
        catalog.create_agent("rover", "scout", "stateful", META)


@pytest.mark.parametrize("name", ["Org", "with space", "-lead", ".dot", "", "a" * 129, "under/slash", "ünit",
                                  "null", "read.", "a..b", "\u202egro", "ops\n"])
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

    # the first tool in the namespace claims it for the connector (seed 002: namespaces are owned)
    assert types(result) == ["Tool.Registered", "Name.Claimed", "Namespace.Claimed"] + \
        ["Tool.Registered", "Name.Claimed"] * 2 + ["Connector.Registered"]
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

    assert types(result) == ["Tool.Registered", "Name.Claimed", "Namespace.Claimed", "Tool.Registered", "Name.Claimed",
                             "Connector.Registered"]
    assert catalog.connector("gh").tools == ["github.issue", "github.pr"]


def test_given_a_tool_named_twice_when_an_image_is_declared_then_it_is_registered_once(catalog: Catalog) -> None:
    result = catalog.declare_image("scout", "registry/scout:1", ["img.alpha", "img.alpha"], META)
    assert types(result) == ["Tool.Registered", "Name.Claimed", "Namespace.Claimed", "Agent.ImageDeclared"]
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

    assert types(result) == ["Tool.Registered", "Name.Claimed", "Namespace.Claimed", "Agent.ImageDeclared"]
    assert catalog.canonical_tool("img.alpha").spec.source == "image"
    assert catalog.agent("scout").image_tools == ["img.alpha", "web.search"]


def test_given_an_unknown_agent_when_an_image_is_declared_then_unknown_subject(catalog: Catalog) -> None:
    with rejected(catalog, UnknownSubject, "unknown_subject"):
        catalog.declare_image("nobody", "registry/x:1", ["img.alpha"], META)


# --- usage errors, in the domain's words (the interface adds its command and flag hints) -----------------


def test_given_no_patterns_when_allowlisted_then_usage_error_naming_the_agent(catalog: Catalog) -> None:
    with rejected(catalog, UsageError, "usage") as info:
        catalog.set_allowlist("scout", [], META)
    assert info.value.details == {"agent": "scout"}
    assert info.value.message == ("an allowlist holds at least one pattern; to allow every tool, clear the "
                                  "allowlist instead")


def test_given_no_tools_when_a_connector_is_registered_then_usage_error_naming_the_connector(
        catalog: Catalog) -> None:
    with rejected(catalog, UsageError, "usage") as info:
        catalog.register_connector("gh", "github", [], META)
    assert info.value.details == {"connector": "gh"}
    assert info.value.message == "a connector declares at least one tool"


def test_given_a_blank_image_reference_when_declared_then_usage_error_naming_the_agent(catalog: Catalog) -> None:
    with rejected(catalog, UsageError, "usage") as info:
        catalog.declare_image("scout", "  ", ["img.alpha"], META)
    assert info.value.details == {"agent": "scout"}
    assert info.value.message == "an image declaration names the image reference"


def test_given_a_time_that_is_not_iso_8601_when_a_change_takes_effect_then_usage_error(catalog: Catalog) -> None:
    with rejected(catalog, UsageError, "usage") as info:
        catalog.add_grant("agent:scout", "web.search", META, "next tuesday")
    assert info.value.details == {"effective_at": "next tuesday"}
    assert info.value.message.startswith("the time a change takes effect, 'next tuesday', is not an ISO 8601")
    with rejected(catalog, UsageError, "usage"):
        catalog.bind_connector("arxiv", "org", META, "2026-13-01")


@pytest.mark.parametrize(("given", "stored"), [
    (None, None),
    ("2026-03-01T10:00:00+01:00", "2026-03-01T09:00:00.000000+00:00"),
    ("2026-03-01T09:00:00Z", "2026-03-01T09:00:00.000000+00:00"),
    ("2026-03-01T09:00:00", "2026-03-01T09:00:00.000000+00:00"),  # no offset: UTC
])
def test_effective_at_is_stored_in_utc_with_microseconds(given: str | None, stored: str | None) -> None:
    assert parse_effective_at(given) == stored
