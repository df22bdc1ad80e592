"""Catalog rules as stories: given these commands, when this command, then these events or this error.

Everything runs on eventsourcing's in-memory store (no I/O). Alias and rename rules live in
test_catalog_aliases.py; releases and the deprecation window in test_catalog_window.py.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import RecordConflictError, StoredEvent
from eventsourcing.utils import get_topic, resolve_topic

from domain import registry
from domain.base import Meta
from domain.catalog import Catalog
from domain.errors import (
    AliasConflict,
    Conflict,
    DuplicateTool,
    IdempotencyKeyReused,
    InvalidId,
    PolicyAlreadySet,
    ReservedId,
    ReservedPrefix,
)
from domain.naming import preset
from domain.schema_check import schema_problems
from domain.values import ToolSpec

META = Meta(actor="tester")


# --- helpers ---------------------------------------------------------------------------------------


def new_catalog() -> Catalog:
    return Catalog(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


def spec(source: str = "builtin", group: str = "core", **fields: Any) -> ToolSpec:
    return ToolSpec(source=source, group=group, tier="default", visibility="public", **fields)


def types(result: Any) -> list[str]:
    return [event.type for event in result.events]


def with_key(key: str) -> Meta:
    return Meta(actor="tester", idempotency_key=key)


@contextmanager
def rejected(catalog: Catalog, error: type[Exception], code: str) -> Iterator[Any]:
    """The command raises `error` with `code`, and nothing at all is written."""
    before = catalog.recorder.max_notification_id()
    with pytest.raises(error) as info:
        yield info
    assert info.value.code == code
    assert catalog.recorder.max_notification_id() == before


@pytest.fixture
def catalog() -> Catalog:
    return new_catalog()


# --- the naming policy ----------------------------------------------------------------------------


def test_given_uninitialised_catalog_when_first_tool_registered_then_tyrum_policy_recorded_in_same_batch(catalog):
    result = catalog.register_tool("memory.seed", spec(group="memory"), META)

    assert types(result)[0] == "Policy.Recorded"
    assert {"Tool.Registered", "Name.Claimed"} <= set(types(result))
    assert result.position == catalog.recorder.max_notification_id()
    assert catalog.policy() == preset("tyrum")


def test_given_uninitialised_catalog_when_first_write_is_a_release_then_tyrum_policy_recorded_in_same_batch(catalog):
    # "recorded once by init, or with the default on the first write" (domain/policy.py): publishing a
    # release is a write too, so the policy must be fixed by it and a later `init` with another preset
    # must be refused.
    result = catalog.publish_release("1.0.0", META)

    assert "Policy.Recorded" in types(result)


@pytest.mark.parametrize("first_write", ["init tyrum", "register a tool"])
def test_given_tyrum_policy_recorded_when_init_with_spring_voyage_then_policy_already_set(catalog, first_write):
    if first_write == "init tyrum":
        catalog.init(preset("tyrum"), META)
    else:
        catalog.register_tool("memory.seed", spec(group="memory"), META)

    with rejected(catalog, PolicyAlreadySet, "policy_already_set") as info:
        catalog.init(preset("spring-voyage"), META)
    assert info.value.details == {"current": "tyrum", "requested": "spring-voyage"}
    assert catalog.policy() == preset("tyrum")


def test_given_uninitialised_catalog_when_init_then_only_policy_recorded(catalog):
    result = catalog.init(preset("spring-voyage"), META)

    assert types(result) == ["Policy.Recorded"]
    assert catalog.policy() == preset("spring-voyage")


def test_given_policy_recorded_when_init_with_same_policy_again_then_nothing_written(catalog):
    catalog.init(preset("spring-voyage"), META)
    before = catalog.recorder.max_notification_id()

    result = catalog.init(preset("spring-voyage"), META)

    assert result.events == [] and result.position == catalog.recorder.max_notification_id()
    assert catalog.recorder.max_notification_id() == before


def test_given_initialised_catalog_when_first_tool_registered_then_policy_not_recorded_again(catalog):
    catalog.init(preset("tyrum"), META)

    result = catalog.register_tool("memory.seed", spec(group="memory"), META)

    assert "Policy.Recorded" not in types(result)


def test_given_spring_voyage_policy_when_registering_tyrum_style_hyphenated_id_then_invalid_id(catalog):
    catalog.init(preset("spring-voyage"), META)

    with rejected(catalog, InvalidId, "invalid_id"):
        catalog.register_tool("web-tools.fetch-page", spec(source="connector", group="extension"), META)
    # the same tool in the spring-voyage shape is fine
    assert "Tool.Registered" in types(
        catalog.register_tool("web_tools.fetch_page", spec(source="connector", group="extension"), META))


# --- register -------------------------------------------------------------------------------------


def test_given_nothing_when_registering_then_tool_registered_and_name_claimed(catalog):
    catalog.init(preset("tyrum"), META)

    result = catalog.register_tool("memory.seed", spec(group="memory"), META)

    assert types(result) == ["Tool.Registered", "Name.Claimed"]
    assert catalog.canonical_tool("memory.seed").tool_id == "memory.seed"


def test_given_registered_tool_when_registering_same_id_then_duplicate_tool(catalog):
    catalog.register_tool("memory.seed", spec(group="memory"), META)

    with rejected(catalog, DuplicateTool, "duplicate_tool") as info:
        catalog.register_tool("memory.seed", spec(group="memory"), META)
    assert info.value.exit_code == 3
    assert info.value.details["tool_id"] == "memory.seed"


def test_given_alias_of_another_tool_when_registering_that_id_then_alias_conflict(catalog):
    catalog.register_tool("memory.seed", spec(group="memory"), META)
    catalog.add_alias("memory.seed", "memory.plant", False, META)

    with rejected(catalog, AliasConflict, "alias_conflict") as info:
        catalog.register_tool("memory.plant", spec(group="memory"), META)
    assert info.value.details["canonical_id"] == "memory.seed"


def test_given_renamed_tool_when_registering_its_old_id_then_alias_conflict(catalog):
    catalog.register_tool("memory.seed", spec(group="memory"), META)
    catalog.rename_tool("memory.seed", "memory.plant", META)

    with rejected(catalog, AliasConflict, "alias_conflict") as info:
        catalog.register_tool("memory.seed", spec(group="memory"), META)
    assert info.value.details["lifecycle"] == "deprecated"


def test_given_plugin_tool_when_claiming_reserved_prefix_then_reserved_prefix(catalog):
    with rejected(catalog, ReservedPrefix, "reserved_prefix") as info:
        catalog.register_tool("memory.recall", spec(source="plugin", plugin="acme", group="extension"), META)
    assert info.value.details["prefix"] == "memory."


def test_given_plugin_tool_when_claiming_reserved_id_then_reserved_id(catalog):
    with rejected(catalog, ReservedId, "reserved_id"):
        catalog.register_tool("artifact.describe", spec(source="plugin", plugin="acme", group="extension"), META)


def test_given_builtin_tool_when_claiming_reserved_id_then_registered(catalog):
    result = catalog.register_tool("artifact.describe", spec(group="core"), META)

    assert "Tool.Registered" in types(result)


def test_given_invalid_json_schema_when_registering_then_registered_with_schema_valid_false(catalog):
    broken = {"type": "strng", "properties": []}
    assert schema_problems(broken)  # the story's premise: this is not a usable JSON Schema

    result = catalog.register_tool("memory.seed", spec(group="memory", input_schema=broken), META)

    assert "Tool.Registered" in types(result)
    tool = catalog.canonical_tool("memory.seed")
    assert tool.spec.schema_valid is False
    assert tool.spec.input_schema == broken


@pytest.mark.parametrize("schema", [None, {"type": "object", "properties": {"path": {"type": "string"}}}])
def test_given_valid_or_no_schema_when_registering_then_schema_valid_true(catalog, schema):
    catalog.register_tool("memory.seed", spec(group="memory", input_schema=schema), META)

    assert catalog.canonical_tool("memory.seed").spec.schema_valid is True


def test_given_operator_claims_schema_valid_when_registering_invalid_schema_then_catalog_judges_it(catalog):
    catalog.register_tool("memory.seed", spec(group="memory", input_schema={"type": 7}, schema_valid=True), META)

    assert catalog.canonical_tool("memory.seed").spec.schema_valid is False


@pytest.mark.parametrize(("tool_id", "source", "family"), [
    ("memory.seed", "builtin", "memory"),
    ("read", "builtin", "standalone"),
    ("mcp.github.create_issue", "mcp", "mcp"),
    ("workboard.task.create", "builtin", "workboard.task"),
])
def test_given_no_family_when_registering_then_family_defaults(catalog, tool_id, source, family):
    catalog.register_tool(tool_id, spec(source=source), META)

    assert catalog.canonical_tool(tool_id).spec.family == family


def test_given_explicit_family_when_registering_then_family_kept(catalog):
    catalog.register_tool("memory.seed", spec(family="seeding"), META)

    assert catalog.canonical_tool("memory.seed").spec.family == "seeding"


# --- idempotency keys -----------------------------------------------------------------------------


def test_given_command_done_with_key_when_same_command_same_key_again_then_replayed_and_nothing_written(catalog):
    first = catalog.register_tool("memory.seed", spec(group="memory"), with_key("k-1"))
    assert first.replayed_key is None
    assert types(first)[0] == "IdempotencyKey.Used"  # the answer lists every event written
    before = catalog.recorder.max_notification_id()

    again = catalog.register_tool("memory.seed", spec(group="memory"), with_key("k-1"))

    assert again.replayed_key == "k-1"
    assert again.events == [] and again.position is None
    assert catalog.recorder.max_notification_id() == before


def test_given_key_used_when_different_command_with_same_key_then_idempotency_key_reused(catalog):
    catalog.register_tool("memory.seed", spec(group="memory"), with_key("k-1"))

    with rejected(catalog, IdempotencyKeyReused, "idempotency_key_reused") as info:
        catalog.register_tool("memory.plant", spec(group="memory"), with_key("k-1"))
    assert info.value.exit_code == 4
    assert info.value.details == {"idempotency_key": "k-1", "first_command": "tool.register"}


def test_given_rejected_command_with_key_when_key_reused_for_another_command_then_accepted(catalog):
    catalog.register_tool("memory.seed", spec(group="memory"), META)
    with rejected(catalog, DuplicateTool, "duplicate_tool"):
        catalog.register_tool("memory.seed", spec(group="memory"), with_key("k-1"))

    result = catalog.publish_release("1.0.0", with_key("k-1"))

    assert result.replayed_key is None and "Releases.Published" in types(result)


# --- concurrency ----------------------------------------------------------------------------------


def test_given_tool_loaded_twice_when_both_changed_and_saved_then_second_save_conflicts(catalog):
    catalog.register_tool("memory.seed", spec(group="memory"), META)
    key = catalog.canonical_tool("memory.seed").id
    first, second = catalog.repository.get(key), catalog.repository.get(key)
    first.add_alias("memory.plant", False, META)
    second.add_alias("memory.sow", False, META)
    catalog.save(first)
    before = catalog.recorder.max_notification_id()

    with pytest.raises(RecordConflictError):
        catalog.save(second)

    assert catalog.recorder.max_notification_id() == before
    assert set(catalog.repository.get(key).aliases) == {"memory.plant"}


class RacingCatalog(Catalog):
    """Runs `competitor` (another writer's command) just before its own next save."""

    competitor = None

    def save(self, *objects: Any, **kwargs: Any) -> Any:
        competitor, self.competitor = self.competitor, None
        if competitor is not None:
            competitor()
        return super().save(*objects, **kwargs)


def racing_catalog() -> RacingCatalog:
    return RacingCatalog(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


def test_given_competing_registration_saved_first_when_registering_then_conflict_and_nothing_written():
    catalog = racing_catalog()
    catalog.init(preset("tyrum"), META)
    after_competitor: list[int | None] = []

    def competing_registration() -> None:
        catalog.register_tool("memory.seed", spec(group="memory"), META)
        after_competitor.append(catalog.recorder.max_notification_id())

    catalog.competitor = competing_registration

    with pytest.raises(Conflict) as info:
        catalog.register_tool("memory.seed", spec(group="memory", description="mine"), META)

    assert info.value.code == "conflict" and info.value.exit_code == 4
    assert catalog.recorder.max_notification_id() == after_competitor[0]
    assert catalog.canonical_tool("memory.seed").spec.description is None


def test_given_competing_rename_saved_first_when_adding_alias_then_conflict():
    catalog = racing_catalog()
    catalog.register_tool("memory.seed", spec(group="memory"), META)
    catalog.competitor = lambda: catalog.rename_tool("memory.seed", "memory.plant", META)

    with pytest.raises(Conflict) as info:
        catalog.add_alias("memory.seed", "memory.sow", False, META)

    assert info.value.code == "conflict"
    assert catalog.owner_of("memory.sow") is None


def test_given_same_keyed_command_saved_first_by_another_writer_when_saving_then_replayed():
    catalog = racing_catalog()
    catalog.init(preset("tyrum"), META)
    catalog.competitor = lambda: catalog.register_tool("memory.seed", spec(group="memory"), with_key("k-1"))

    result = catalog.register_tool("memory.seed", spec(group="memory"), with_key("k-1"))

    assert result.replayed_key == "k-1" and result.events == []


# --- stored formats are forever: upcasting --------------------------------------------------------


def _stored_registered_event(catalog: Catalog) -> Any:
    [notification] = [n for n in catalog.recorder.select_notifications(start=1, limit=100)
                      if n.topic == "Tool.Registered"]
    return notification


def test_given_v1_registered_event_in_store_when_mapped_then_latest_release_is_none(catalog):
    catalog.publish_release("1.0.0", META)
    catalog.register_tool("memory.seed", spec(group="memory"), META)
    stored = _stored_registered_event(catalog)
    state = catalog.mapper.transcoder.decode(stored.state)
    assert state["class_version"] == 2 and state["latest_release"] == "1.0.0"
    del state["latest_release"], state["class_version"]  # v1 had neither

    event = catalog.mapper.to_domain_event(StoredEvent(
        originator_id=stored.originator_id, originator_version=stored.originator_version,
        topic=stored.topic, state=catalog.mapper.transcoder.encode(state)))

    assert type(event).__name__ == "Registered"
    assert event.latest_release is None
    assert event.tool_id == "memory.seed"


def test_given_v2_registered_event_in_store_when_mapped_then_latest_release_kept(catalog):
    catalog.publish_release("1.0.0", META)
    catalog.register_tool("memory.seed", spec(group="memory"), META)
    stored = _stored_registered_event(catalog)

    event = catalog.mapper.to_domain_event(StoredEvent(
        originator_id=stored.originator_id, originator_version=stored.originator_version,
        topic=stored.topic, state=stored.state))

    assert event.latest_release == "1.0.0"


def test_given_v1_registered_data_when_upcast_then_latest_release_added_as_none():
    data = {"tool_id": "memory.seed", "spec": {"source": "builtin"}, "actor": "tester"}

    upcast = registry.upcast("Tool.Registered", 1, data)

    assert upcast == {**data, "latest_release": None}
    assert "latest_release" not in data  # the caller's data is left alone


def test_given_current_version_data_when_upcast_then_unchanged():
    data = {"tool_id": "memory.seed", "latest_release": "1.0.0"}

    assert registry.current_version("Tool.Registered") == 2
    assert registry.upcast("Tool.Registered", 2, data) == data
    assert registry.upcast("Tool.Renamed", 1, {"old_id": "a.b"}) == {"old_id": "a.b"}


# --- published event names ------------------------------------------------------------------------


def test_every_event_class_has_a_stable_published_name():
    assert registry.EVENT_CLASSES
    for name, cls in registry.EVENT_CLASSES.items():
        assert re.fullmatch(r"[A-Z][A-Za-z]*\.[A-Z][A-Za-z]*", name), name
        assert cls.TOPIC == name
        assert get_topic(cls) == name
        assert resolve_topic(name) is cls


def _generated_created_class(attr: str, value: type) -> bool:
    # eventsourcing adds an unused default `Created` (without a TOPIC) to aggregates that declare
    # their own created event; only the declared one is ever stored.
    return attr == "Created" and "TOPIC" not in vars(value)


def test_every_concrete_event_class_of_every_aggregate_is_published():
    published = set(registry.EVENT_CLASSES.values())
    for aggregate in registry.AGGREGATES:
        for attr, value in vars(aggregate).items():
            if (isinstance(value, type) and issubclass(value, Aggregate.Event) and attr != "Event"
                    and not _generated_created_class(attr, value)):
                assert value in published, f"{aggregate.__name__}.{attr}"


def test_given_a_busy_catalog_then_every_stored_topic_is_a_published_name(catalog):
    catalog.publish_release("1.0.0", with_key("k-1"))
    catalog.register_tool("memory.seed", spec(group="memory"), META)
    catalog.rename_tool("memory.seed", "memory.plant", META)
    catalog.add_alias("memory.plant", "memory.sow", True, META)
    catalog.deprecate_alias("memory.sow", META)
    catalog.record_milestone("memory.sow", "docs_shipped", "1.0.0", None, META)
    catalog.record_step("memory.sow", 1, "docs", META)

    topics = {n.topic for n in catalog.recorder.select_notifications(start=1, limit=100)}

    assert topics <= set(registry.EVENT_CLASSES)
    assert all("." in t and ":" not in t for t in topics)
