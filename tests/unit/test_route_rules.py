"""Class labels and route rules (ADR-027) as stories, on the in-memory store: seed 004's example —
`get_document` is source:sensitive, `find_web` (alias `web_search`, the seed's literal name) is
sink:network — and the pure decision that gives allow or deny with its evidence."""
from __future__ import annotations

import pytest

from domain.catalog import Catalog
from domain.errors import RetiredAlias, UnknownSubject, UnknownTool, UsageError
from domain.naming import preset
from domain.route_errors import DuplicateRouteRule, UnknownRouteRule
from domain.routing import RouteRule, ToolFacts, decide
from tests.unit.conftest import META, new_catalog, rejected, spec, types

READ = ToolFacts(tool_key="k-read", canonical_id="get_document", classes=["source:local", "source:sensitive"])
SEARCH = ToolFacts(tool_key="k-search", canonical_id="find_web", classes=["sink:network"])
SEARCH_ALT = ToolFacts(tool_key="k-alt", canonical_id="find_web_alt", classes=["sink:network", "sink:external"])
NO_SINK = RouteRule(rule_id="no_sink_after_sensitive_source", deny_any_class=["sink:network", "sink:external"],
                    after_any_class=["source:sensitive"])


@pytest.fixture
def catalog() -> Catalog:
    app = new_catalog()
    app.init(preset("verb-noun"), META)
    app.register_tool("get_document", spec(classes=["source:local", "source:sensitive"]), META)
    app.register_tool("find_web", spec(), META)
    app.add_alias("find_web", "web_search", False, META)
    app.create_unit("eng", None, META)
    app.create_agent("scout", "eng", "stateful", META)
    return app


# --- classes --------------------------------------------------------------------------------------------


def test_when_a_tool_is_classified_then_one_event_records_its_ordered_labels(catalog: Catalog) -> None:
    result = catalog.classify_tool("web_search", ["sink:network", "sink:external"], META)

    assert types(result) == ["Tool.Classified"]
    assert catalog.history(after=result.position - 1, limit=1)[0].state["classes"] == ["sink:network",
                                                                                      "sink:external"]
    assert catalog.canonical_tool("find_web").spec.classes == ["sink:network", "sink:external"]


def test_when_the_classes_are_unchanged_then_nothing_is_written(catalog: Catalog) -> None:
    catalog.classify_tool("find_web", ["sink:network"], META)

    assert catalog.classify_tool("find_web", ["sink:network"], META).events == []


@pytest.mark.parametrize(("classes", "error", "code"), [
    ([], UsageError, "usage"),
    (["sink:network", "sink:network"], UsageError, "usage"),
    (["Sink Network"], Exception, "invalid_name"),
])
def test_given_a_bad_class_list_when_classifying_then_rejected_and_nothing_written(
        catalog: Catalog, classes: list[str], error: type, code: str) -> None:
    with rejected(catalog, error, code):
        catalog.classify_tool("find_web", classes, META)


def test_given_an_unknown_tool_when_classifying_then_unknown_tool(catalog: Catalog) -> None:
    with rejected(catalog, UnknownTool, "unknown_tool"):
        catalog.classify_tool("fetch_page", ["sink:network"], META)


# --- rules as events ------------------------------------------------------------------------------------


def test_when_rules_are_added_and_removed_then_each_is_an_event(catalog: Catalog) -> None:
    first = catalog.add_route_rule(NO_SINK.model_dump(), META)
    removed = catalog.remove_route_rule(NO_SINK.rule_id, META)

    assert types(first) == ["RouteRules.Started", "RouteRules.RuleAdded"]
    assert types(removed) == ["RouteRules.RuleRemoved"]


def test_a_name_rule_is_stored_by_the_canonical_tool_even_when_written_with_an_alias(catalog: Catalog) -> None:
    result = catalog.add_route_rule({"rule_id": "no_web", "deny_tool": "web_search"}, META)

    rule = catalog.history(after=result.position - 1, limit=1)[0].state["rule"]
    assert rule["deny_tool"] == "find_web"
    assert rule["deny_tool_key"] == str(catalog.canonical_tool("find_web").id)


@pytest.mark.parametrize(("rule", "error", "code"), [
    ({"rule_id": "no_sink_after_sensitive_source", "deny_tool": "find_web"}, DuplicateRouteRule,
     "duplicate_route_rule"),
    ({"rule_id": "r2", "deny_tool": "fetch_page"}, UnknownTool, "unknown_tool"),
    ({"rule_id": "r4", "after_any_class": ["source:sensitive"]}, UsageError, "usage"),
    ({"rule_id": "r3", "deny_any_class": ["sink:network"], "scope": "unit:nowhere"}, UnknownSubject,
     "unknown_subject"),
])
def test_given_a_bad_rule_when_added_then_rejected_and_nothing_written(catalog: Catalog, rule: dict, error: type,
                                                                       code: str) -> None:
    catalog.add_route_rule(NO_SINK.model_dump(), META)
    with rejected(catalog, error, code):
        catalog.add_route_rule(rule, META)


def test_given_no_such_rule_when_removed_then_unknown_route_rule(catalog: Catalog) -> None:
    with rejected(catalog, UnknownRouteRule, "unknown_route_rule"):
        catalog.remove_route_rule("nope", META)


def test_given_a_retired_alias_when_named_in_a_rule_then_retired_alias(catalog: Catalog) -> None:
    catalog.rename_tool("get_document", "get_file", META)
    catalog.publish_release("1.0.0", META)
    for milestone in ("canonical_shipped", "docs_shipped", "data_rewrite_shipped", "alias_only_emission"):
        catalog.record_milestone("get_document", milestone, "1.0.0", None, META)
    catalog.record_step("get_document", 1, "confirmed", META)
    catalog.record_step("get_document", 2, "confirmed", META)
    catalog.publish_release("1.1.0", META)
    catalog.retire_alias("get_document", "1.1.0", META)
    with rejected(catalog, RetiredAlias, "retired_alias"):
        catalog.add_route_rule({"rule_id": "r", "deny_tool": "get_document"}, META)


# --- the decision ---------------------------------------------------------------------------------------


def test_given_a_sensitive_read_when_a_network_sink_is_called_then_denied_with_full_evidence() -> None:
    decision = decide(SEARCH, [READ], [NO_SINK], {"agent:scout"})

    assert decision == {"decision": "deny", "matched_tool_name": "find_web",
                        "matched_tool_classes": ["sink:network"],
                        "matched_route_rule_id": "no_sink_after_sensitive_source",
                        "reason_code": "denied_by_class_rule", "after_tool_name": "get_document"}


def test_given_no_sensitive_read_when_a_sink_is_called_then_allowed_and_the_classes_still_shown() -> None:
    decision = decide(SEARCH_ALT, [SEARCH], [NO_SINK], set())

    assert (decision["decision"], decision["reason_code"]) == ("allow", "no_rule_matched")
    assert decision["matched_route_rule_id"] is None
    assert decision["matched_tool_classes"] == ["sink:network", "sink:external"]


def test_a_name_rule_and_a_class_rule_combine_and_the_first_rule_id_is_the_evidence() -> None:
    by_name = RouteRule(rule_id="a_no_search_after_read", deny_tool_key="k-search", after_tool_key="k-read")
    both = RouteRule(rule_id="b_search_if_network", deny_tool_key="k-search", deny_any_class=["sink:network"])

    assert decide(SEARCH, [READ], [NO_SINK, both, by_name], set())["matched_route_rule_id"] == \
        "a_no_search_after_read"
    assert decide(SEARCH, [], [NO_SINK, both, by_name], set())["reason_code"] == "denied_by_tool_and_class_rule"
    assert decide(SEARCH_ALT, [], [both], set())["decision"] == "allow"  # the name does not match


def test_deny_all_classes_needs_every_label() -> None:
    rule = RouteRule(rule_id="external_network", deny_all_classes=["sink:network", "sink:external"])

    assert decide(SEARCH, [], [rule], set())["decision"] == "allow"
    assert decide(SEARCH_ALT, [], [rule], set())["decision"] == "deny"


def test_a_scoped_rule_holds_only_inside_its_scope() -> None:
    rule = NO_SINK.model_copy(update={"scope": "unit:research"})

    assert decide(SEARCH, [READ], [rule], {"unit:org", "agent:scout"})["decision"] == "allow"
    assert decide(SEARCH, [READ], [rule], {"unit:research", "unit:org", "agent:scout"})["decision"] == "deny"
