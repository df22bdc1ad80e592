"""Seed rules of routing, images and exposure selectors, one story each (the rules table of
docs/operators.md lists them by number): 23 is ADR-027's `match_all_classes` on the "after" side of a route
rule (seed 004), 24 images run by units (seed 002, Spring Voyage), 25 ARCH-21's reserved exposure selectors
(seed 000). A rule a command would break is refused with a stable code (exit 3) and nothing is written.

In-memory store only (no I/O); the command line and HTTP tell the same rules in
tests/integration/test_seed_rules_routing_cli.py and tests/e2e/test_serve_http.py.
"""
from __future__ import annotations

import pytest
from eventsourcing.persistence import StoredEvent

from domain import registry
from domain.catalog import Catalog
from domain.errors import InvalidName, NamespaceOwned, ReservedPrefix, UnknownSubject, UsageError
from domain.manifest import Manifest
from domain.naming import preset
from domain.plan_diff import plan_commands
from domain.routing import RouteRule, RouteRules, ToolFacts, decide
from domain.selectors import UnsupportedSelector, refuse_selectors
from tests.unit.conftest import META, new_catalog, rejected, spec, spring_voyage_story, types

# --- rule 22: `match_all_classes` on the "after" side (ADR-027) ----------------------------------------

SENSITIVE_STORE = ToolFacts(tool_key="k-vault", canonical_id="read_vault",
                            classes=["source:sensitive", "store:persistent"])
SENSITIVE = ToolFacts(tool_key="k-doc", canonical_id="get_document", classes=["source:local", "source:sensitive"])
STORE = ToolFacts(tool_key="k-db", canonical_id="query_db", classes=["store:persistent"])
SINK = ToolFacts(tool_key="k-web", canonical_id="find_web", classes=["sink:network"])
NO_SINK_AFTER_SENSITIVE_STORE = RouteRule(rule_id="no_sink_after_sensitive_store", deny_any_class=["sink:network"],
                                          after_all_classes=["source:sensitive", "store:persistent"])
EVERYONE: set[str] = set()


def test_rule_23_given_after_all_classes_when_one_earlier_tool_has_them_all_then_denied_naming_it() -> None:
    decision = decide(SINK, [STORE, SENSITIVE_STORE], [NO_SINK_AFTER_SENSITIVE_STORE], EVERYONE)

    assert decision["decision"] == "deny"
    assert decision["matched_route_rule_id"] == "no_sink_after_sensitive_store"
    assert decision["after_tool_name"] == "read_vault"


def test_rule_23_given_after_all_classes_when_the_classes_are_spread_over_two_calls_then_allowed() -> None:
    """Each matcher reads one earlier call, as the deny side reads the call: two calls with one class each
    are not one tool with both."""
    decision = decide(SINK, [SENSITIVE, STORE], [NO_SINK_AFTER_SENSITIVE_STORE], EVERYONE)

    assert decision["decision"] == "allow"


def test_rule_23_after_any_and_all_classes_combine_on_the_same_earlier_call() -> None:
    both = NO_SINK_AFTER_SENSITIVE_STORE.model_copy(update={"after_any_class": ["source:local"]})

    assert decide(SINK, [SENSITIVE_STORE], [both], EVERYONE)["decision"] == "allow"  # not source:local
    local_vault = SENSITIVE_STORE.model_copy(update={"classes": [*SENSITIVE_STORE.classes, "source:local"]})
    assert decide(SINK, [local_vault], [both], EVERYONE)["decision"] == "deny"


@pytest.fixture
def catalog() -> Catalog:
    app = new_catalog()
    app.init(preset("verb-noun"), META)
    app.register_tool("find_web", spec(classes=["sink:network"]), META)
    return app


def test_rule_23_when_added_then_the_event_records_the_after_all_classes(catalog: Catalog) -> None:
    result = catalog.add_route_rule({"rule_id": "r", "deny_any_class": ["sink:network"],
                                     "after_all_classes": ["source:sensitive", "store:persistent"]}, META)

    assert result.events[-1].type == "RouteRules.RuleAdded"
    stored = catalog.history(after=result.position - 1, limit=1)[0].state["rule"]
    assert stored["after_all_classes"] == ["source:sensitive", "store:persistent"]


@pytest.mark.parametrize(("rule", "error", "code"), [
    ({"after_all_classes": ["Source Sensitive"], "deny_any_class": ["sink:network"]}, InvalidName, "invalid_name"),
    ({"after_all_classes": ["source:sensitive"]}, UsageError, "usage"),  # nothing denied
])
def test_rule_23_given_a_bad_after_all_classes_rule_when_added_then_refused_and_nothing_written(
        catalog: Catalog, rule: dict, error: type, code: str) -> None:
    with rejected(catalog, error, code):
        catalog.add_route_rule({"rule_id": "r", **rule}, META)


def test_rule_23_a_v1_rule_added_event_reads_with_no_after_all_classes() -> None:
    stored_v1 = {"rule": {"rule_id": "r", "deny_any_class": ["sink:network"], "deny_all_classes": [],
                          "deny_tool": None, "deny_tool_key": None, "after_any_class": ["source:sensitive"],
                          "after_tool": None, "after_tool_key": None, "scope": None}}

    upcast = registry.upcast("RouteRules.RuleAdded", 1, stored_v1)

    assert upcast["rule"] == {**stored_v1["rule"], "after_all_classes": []}
    assert "after_all_classes" not in stored_v1["rule"]  # the stored form itself is never changed
    assert RouteRule.model_validate(upcast["rule"]).triggered_by([SENSITIVE]) == SENSITIVE
    assert RouteRules.RuleAdded.class_version == 2


def test_rule_23_a_v1_rule_added_event_in_the_store_maps_to_a_rule_with_no_after_all_classes(catalog: Catalog) -> None:
    catalog.add_route_rule({"rule_id": "r", "deny_any_class": ["sink:network"]}, META)
    [stored] = [n for n in catalog.recorder.select_notifications(start=1, limit=100)
                if n.topic == "RouteRules.RuleAdded"]
    state = catalog.mapper.transcoder.decode(stored.state)
    del state["class_version"], state["rule"]["after_all_classes"]  # as version 1 stored it

    event = catalog.mapper.to_domain_event(StoredEvent(
        originator_id=stored.originator_id, originator_version=stored.originator_version,
        topic=stored.topic, state=catalog.mapper.transcoder.encode(state)))

    assert event.rule["after_all_classes"] == []


# --- rule 23: images run by units (Spring Voyage, seed 002) ----------------------------------------------


def test_rule_24_when_a_unit_declares_its_image_then_the_unit_records_it_and_registers_its_tools() -> None:
    app = spring_voyage_story()

    result = app.declare_image("unit:research", "acme/librarian:1.1", ["acme.cite", "acme.summarize"], META)

    assert types(result)[-1] == "Unit.ImageDeclared"
    unit = app.unit("research")
    assert (unit.image, unit.image_tools) == ("acme/librarian:1.1", ["acme.cite", "acme.summarize"])
    assert app.agent("scout").image is None  # the unit's agent runs no image by it


def test_rule_24_an_agent_is_named_as_before_or_as_agent_colon_name() -> None:
    app = spring_voyage_story()

    assert types(app.declare_image("scout", "acme/scout:1.0", ["acme.cite"], META))[-1] == "Agent.ImageDeclared"
    assert types(app.declare_image("agent:scout", "acme/scout:1.1", ["acme.cite"], META))[-1] == \
        "Agent.ImageDeclared"


def test_rule_24_when_an_unknown_unit_declares_an_image_then_unknown_subject_and_nothing_written() -> None:
    app = spring_voyage_story()

    with rejected(app, UnknownSubject, "unknown_subject") as info:
        app.declare_image("unit:nowhere", "acme/librarian:1.1", ["acme.cite"], META)
    assert info.value.details["subject"] == "unit:nowhere"


def test_rule_24_a_units_image_keeps_the_platform_and_the_publishers_namespaces() -> None:
    app = spring_voyage_story()
    app.declare_image("unit:org", "acme/librarian:1.1", ["acme.cite"], META)

    with rejected(app, ReservedPrefix, "reserved_prefix"):
        app.declare_image("unit:research", "acme/librarian:1.1", ["sv.memory.forget"], META)
    with rejected(app, NamespaceOwned, "namespace_owned"):
        app.declare_image("unit:research", "evil/rogue:1.0", ["acme.exfiltrate"], META)


@pytest.mark.parametrize("subject", ["unit:", "group:eng"])
def test_rule_24_a_malformed_subject_is_a_usage_error_and_writes_nothing(subject: str) -> None:
    app = spring_voyage_story()

    with rejected(app, UsageError, "usage"):
        app.declare_image(subject, "acme/librarian:1.1", ["acme.cite"], META)


def test_rule_24_a_manifest_declares_a_units_image_and_never_drops_one() -> None:
    librarian = {"ref": "acme/librarian:1.1", "tools": ["acme.cite"]}
    running = Manifest.model_validate({"policy": "spring-voyage", "units": {"eng": {"image": librarian}}})
    bare = Manifest.model_validate({"policy": "spring-voyage", "units": {"eng": {}}})

    planned = [" ".join(c.argv) for c in plan_commands(running, bare, fresh=False).commands]
    dropped = plan_commands(bare, running.with_implied_tools(), fresh=False)

    assert planned[-1] == "image declare unit:eng --image acme/librarian:1.1 --tool acme.cite"
    assert planned[0].startswith("tool register acme.cite --source image")  # implied, as an agent's image's
    assert "unit 'eng' declares image 'acme/librarian:1.1'; an image declaration is replaced, never removed" in [
        v.message for v in dropped.violations]


# --- rule 24: ARCH-21's reserved exposure selectors are refused, never ignored ----------------------------


@pytest.mark.parametrize("selector", ["execution_profile", "conversation_kind"])
def test_rule_25_when_a_reserved_exposure_selector_is_given_then_unsupported_selector_naming_it(selector: str) -> None:
    with pytest.raises(UnsupportedSelector) as info:
        refuse_selectors({"subject": "agent:scout", selector: "coding"})

    assert (info.value.code, info.value.exit_code) == ("unsupported_selector", 3)
    assert info.value.details["selector"] == selector
    assert info.value.details["reserved"] == ["execution_profile", "conversation_kind"]
    assert f"leave {selector} out" in info.value.message and "coding" not in info.value.message


@pytest.mark.parametrize("selector", ["conversation_id", "turn_id"])
def test_rule_25_a_context_report_selector_is_no_exposure_selector_either(selector: str) -> None:
    with pytest.raises(UnsupportedSelector, match="context-report selector"):
        refuse_selectors({selector: "c-1"})


def test_rule_25_without_a_selector_the_read_goes_on() -> None:
    refuse_selectors({"subject": "agent:scout", "execution_profile": None, "at": 3})
