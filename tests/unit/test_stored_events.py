"""Stored formats are forever: upcasting old event versions, the published event names, and the
history feed as the store holds it.

In-memory store only (no I/O).
"""
from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic, resolve_topic

from domain import registry
from domain.agent import Agent, agent_key
from domain.catalog import Catalog, HistoryRecord
from domain.errors import IntegrityFailure
from domain.unit import Unit, unit_key
from tests.unit.conftest import META, new_catalog, spec, with_key

@pytest.fixture
def catalog() -> Catalog:
    return new_catalog()


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
    assert registry.upcast("Tool.Renamed", 2, {"old_id": "a.b"}) == {"old_id": "a.b"}


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
    catalog.publish_release("1.1.0", META)
    catalog.record_milestone("memory.sow", "docs_shipped", "1.1.0", None, META)
    catalog.record_step("memory.sow", 1, "docs", META)

    topics = {n.topic for n in catalog.recorder.select_notifications(start=1, limit=100)}

    assert topics <= set(registry.EVENT_CLASSES)
    assert all("." in t and ":" not in t for t in topics)


# Rows exactly as the code stored them before Unit and Agent left domain/subjects.py for domain/unit.py
# and domain/agent.py: a stored topic is the class's TOPIC, never its module path, so they still resolve.
STORED_BEFORE_THE_SPLIT = [
    ("215734f6-e99d-5747-ba6c-54eb490aee99", "Unit.Created",
     b'{"timestamp":{"_type_":"datetime_iso","_data_":"2026-11-28T03:24:39.020547+00:00"},'
     b'"originator_topic":"Unit","actor":"tester","reason":null,"idempotency_key":null,"name":"eng","parent":null}'),
    ("fdb65a84-a0e2-5edd-b281-29a12b4e674e", "Agent.Created",
     b'{"timestamp":{"_type_":"datetime_iso","_data_":"2026-11-28T03:24:39.025028+00:00"},'
     b'"originator_topic":"Agent","actor":"tester","reason":null,"idempotency_key":null,"name":"scout",'
     b'"unit":"eng","state_mode":"stateless"}'),
]


def test_given_subjects_stored_before_the_split_when_read_then_they_load_as_the_moved_classes(catalog):
    # given a unit and an agent stored by the code that held both aggregates in domain/subjects.py
    catalog.recorder.insert_events([StoredEvent(originator_id=uuid.UUID(key), originator_version=1, topic=topic,
                                                state=state) for key, topic, state in STORED_BEFORE_THE_SPLIT])
    # when the catalog reads them
    unit, agent = catalog.unit("eng"), catalog.agent("scout")
    # then they are the aggregates of domain/unit.py and domain/agent.py, as stored
    assert (type(unit), unit.name, unit.parent, unit.bindings) == (Unit, "eng", None, set())
    assert (type(agent), agent.name, agent.unit, agent.state_mode) == (Agent, "scout", "eng", "stateless")
    assert unit.id == unit_key("eng") and agent.id == agent_key("scout")


# --- the history feed -----------------------------------------------------------------------------


def test_given_a_few_writes_then_history_reads_them_in_order_after_a_position(catalog):
    catalog.publish_release("1.0.0", META)
    catalog.register_tool("memory.seed", spec(group="memory"), META)

    records = catalog.history(after=0, limit=100)

    assert all(isinstance(r, HistoryRecord) for r in records)
    assert [r.position for r in records] == [1, 2, 3, 4, 5]
    assert [r.topic for r in records] == ["Policy.Recorded", "Releases.Started", "Releases.Published",
                                          "Tool.Registered", "Name.Claimed"]
    assert records[2].state["version"] == "1.0.0" and records[2].originator_version == 2
    assert records[3].state["class_version"] == 2  # as stored, not upcast
    assert catalog.history(after=2, limit=2) == records[2:4]
    assert catalog.history(after=5, limit=100) == []


def test_given_topics_then_history_reads_only_those(catalog):
    catalog.publish_release("1.0.0", META)
    catalog.publish_release("1.1.0", META)

    published = catalog.history(after=0, limit=100, topics=("Releases.Published",))

    assert [(r.position, r.state["version"]) for r in published] == [(3, "1.0.0"), (4, "1.1.0")]


def test_given_a_stored_event_that_no_longer_decodes_then_history_is_an_integrity_failure(catalog):
    catalog.publish_release("1.0.0", META)
    # someone alters the stored bytes of position 2 (the in-memory store keeps them in a list)
    stored = catalog.recorder._stored_events[1]
    catalog.recorder._stored_events[1] = StoredEvent(
        originator_id=stored.originator_id, originator_version=stored.originator_version,
        topic=stored.topic, state=stored.state[:-3])

    assert [r.position for r in catalog.history(after=0, limit=1)] == [1]
    with pytest.raises(IntegrityFailure) as raised:
        catalog.history(after=0, limit=100)
    assert (raised.value.code, raised.value.exit_code) == ("integrity", 5)
    assert raised.value.details == {"position": 2}
