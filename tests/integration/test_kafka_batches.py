"""`project --from kafka` gathers polls into large batches and, while the topic is behind (a batch cut at
its size), leaves the effective sets to be refreshed once it is caught up, as a store catch-up does.
With tiny batches every batch but the last is cut at its size: the read model must still equal the
store-fed one, its sets be valid through the head, and the changelog hold each subject's final set.
The next batch is fetched and parsed while one is applied: a batch fetched past a bad message is never
applied, nor its offsets stored.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from consumers.runner import KafkaProjection
from consumers.streaming import CorruptMessage
from infra import kafka_clients
from infra.projecting import changelog_publisher
from infra.settings import Settings
from infra.wiring import open_read_model
from projections.effective.reads import subjects_at
from projections.effective.maintenance import is_settled
from projections.fingerprint import fingerprint
from projections.queries import current_effective
from tests.integration.kafka_support import (
    a_bad_message_between_story_halves,
    assert_each_position_once,
    events_on_topic,
    on_both_kafka_clients,
    read_model_facts,
    read_topic,
    relay_all,
    store_fingerprint,
    store_head,
)
from tests.support import SCRIPT, run_in_process


def test_a_topic_projected_in_batches_cut_at_their_size_ends_with_the_store_fed_sets_and_changelog(
        kafka_settings: Settings, tmp_path: Path) -> None:
    # Given the example story in the store, relayed to the events topic
    run_in_process(kafka_settings.home, SCRIPT)
    head = store_head(kafka_settings)
    relay_all(kafka_settings, tmp_path / "relay-state.json")
    events_on_topic(kafka_settings, range(1, head + 1))
    store_head_position, store_print = store_fingerprint(kafka_settings, tmp_path / "store.duckdb")

    # When it is projected from Kafka in batches of at most 7 events
    path = tmp_path / "from-kafka.duckdb"
    tracking = KafkaProjection(
        consumer=kafka_clients.consumer(kafka_settings, kafka_settings.kafka_group_id),
        topic=kafka_settings.kafka_events_topic, dead_letter=lambda message, reason: None,
        publish_changes=changelog_publisher(kafka_settings),
        open_read_model=lambda: open_read_model(kafka_settings, path), should_stop=lambda: False,
        batch_events=7).run(follow=False, idle_seconds=1)

    # Then the read model is the store-fed one, its sets valid through the head
    assert tracking.position == head == store_head_position
    con = open_read_model(kafka_settings, path)
    try:
        assert fingerprint(con) == store_print
        assert is_settled(con, head)
        # and the changelog's last document for each subject is that subject's set now
        subjects = {f"{kind}:{name}" for kind, name in subjects_at(con)}
        published = read_topic(kafka_settings, kafka_settings.kafka_effective_topic,
                               lambda m: subjects <= {message.key.decode() for message in m},
                               what=f"a document for each of {len(subjects)} subjects")
        latest = {message.key.decode(): json.loads(message.value) for message in published
                  if message.key != b"toolcat:caught-up"}  # the marker (docs/services.md)
        for subject, document in latest.items():
            assert document["tools"] == json.loads(json.dumps(current_effective(con, subject))), subject
            assert document["position"] <= head
    finally:
        con.close()


@on_both_kafka_clients
def test_batches_fetched_past_a_bad_message_are_never_applied(kafka_settings: Settings, tmp_path: Path) -> None:
    other = tmp_path / "from-kafka"
    # Given the first half of the story on the topic, then a message that is not an envelope, then the rest
    valid, head = a_bad_message_between_story_halves(kafka_settings, tmp_path / "relay-state.json")
    assert head > valid + 14, "the rest of the story must fill batches after the bad message's"

    # When it is projected in batches of 7, each next batch fetched and parsed while one is applied
    letters: list[tuple[int, str]] = []
    other.mkdir()
    with pytest.raises(CorruptMessage) as stopped:
        KafkaProjection(
            consumer=kafka_clients.consumer(kafka_settings, kafka_settings.kafka_group_id),
            topic=kafka_settings.kafka_events_topic,
            dead_letter=lambda message, reason: letters.append((message.offset, reason)),
            publish_changes=lambda con: 0,
            open_read_model=lambda: open_read_model(kafka_settings, other / "catalog.duckdb"),
            should_stop=lambda: False, batch_events=7).run(follow=False, idle_seconds=1)

    # Then it stopped at the bad message (one message per position before it, offsets from 0), which
    # alone was dead-lettered, having applied each event before it once and nothing after it
    assert (stopped.value.details["offset"], stopped.value.details["position"]) == (valid, valid)
    assert [offset for offset, _reason in letters] == [valid]
    facts = read_model_facts(other)
    assert_each_position_once(facts, valid)
    # and the read model's offsets resume at the bad message, not past what was fetched ahead
    assert facts["offsets"] == {(kafka_settings.kafka_events_topic, 0): valid}


@on_both_kafka_clients
def test_a_followers_burst_is_applied_in_batches_bounded_by_time_and_size(kafka_settings: Settings,
                                                                          tmp_path: Path) -> None:
    # Given the whole story arriving at once on the topic
    run_in_process(kafka_settings.home, SCRIPT)
    head = store_head(kafka_settings)
    relay_all(kafka_settings, tmp_path / "relay-state.json")
    _, store_print = store_fingerprint(kafka_settings, tmp_path / "store.duckdb")

    # When a follower projects it with batches that stop gathering at once (no time) or at 25 events
    other = tmp_path / "follower"
    other.mkdir()
    applied: list[int] = []
    KafkaProjection(
        consumer=kafka_clients.consumer(kafka_settings, kafka_settings.kafka_group_id),
        topic=kafka_settings.kafka_events_topic, dead_letter=lambda message, reason: None,
        publish_changes=lambda con: 0, open_read_model=lambda: open_read_model(kafka_settings, other / "catalog.duckdb"),
        should_stop=lambda: bool(applied) and applied[-1] >= head,
        progress=lambda tracking: applied.append(tracking.position),
        batch_events=25, batch_seconds=0.0).run(follow=True, idle_seconds=0)

    # Then the burst was split into batches, in order, and each event was applied once, nothing lost
    assert len(applied) >= head // 25 and applied == sorted(set(applied)) and applied[-1] == head
    facts = read_model_facts(other)
    assert_each_position_once(facts, head)
    # and the read model is the store-fed one, its sets valid through the head
    assert facts["fingerprint"] == store_print
    con = open_read_model(kafka_settings, other / "catalog.duckdb")
    try:
        assert is_settled(con, head)
    finally:
        con.close()
