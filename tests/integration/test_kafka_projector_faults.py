"""The Kafka-fed projector under faults: killed in the middle of a batch (a real child process that
dies with os._exit, no cleanup) it keeps none of that batch and resumes from the offsets stored in the
read model; a message that is not an envelope goes to the dead-letter topic and stops it, every time
at the same place, after applying what came before; so does an altered envelope, or one of another
schema, each with its reason.
"""
from __future__ import annotations

import base64
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from consumers.streaming import CorruptMessage
from infra.cli import run as run_command
from infra.settings import Settings
from tests.integration.kafka_support import (
    a_bad_message_between_story_halves,
    on_both_kafka_clients,
    assert_each_position_once,
    events_on_topic,
    lines_before,
    produce_raw,
    read_model_facts,
    read_topic,
    relay_all,
    store_fingerprint,
    store_head,
    toolcat,
)
from tests.support import error_of, ok, run_in_process, run_python_child

BEFORE_SUBJECTS, SUBJECTS_ON = lines_before(("unit", "create"))
DIE_ON = "Grants.Added"  # part of the second half of the story, several times


def project_from_kafka(settings: Settings, home: Path) -> Any:
    return toolcat("project", "--from", "kafka", "--idle-seconds", "2", home=home, settings=settings)


# -- the child process -------------------------------------------------------------------------------

def child_project_kafka_and_die(settings_json: str, mode: str, batch_file: str) -> None:
    """Project the events topic as `project --from kafka` does, and die without cleanup inside the
    first batch that has anything new: in a handler, after other events of the batch were handled
    (`handler`), or once every row and the offsets are written, just before COMMIT (`before-commit`)."""
    from consumers.streaming import StreamProjector
    from infra import kafka_clients
    from infra.wiring import open_read_model
    from projections.projector import Projector, default_parts

    settings = Settings(**json.loads(settings_json))
    con = open_read_model(settings)
    stream = StreamProjector(kafka_clients.consumer(settings, settings.kafka_group_id),
                             settings.kafka_events_topic, lambda message, reason: None)
    stream.assign(con)
    seen = 0

    def dying_parts() -> list[Any]:
        parts = default_parts()
        for part in parts:
            if DIE_ON in part.handlers:
                original = part.handlers[DIE_ON]

                def dying(envelope: Any, data: dict[str, Any], original: Any = original) -> None:
                    nonlocal seen
                    seen += 1
                    if seen == 2:
                        os._exit(9)
                    original(envelope, data)
                part.handlers[DIE_ON] = dying
        return parts

    class DyingBeforeCommit(Projector):
        def apply(self, envelopes: list[Any], also: Any = None, **options: Any) -> Any:
            def also_then_die(connection: Any) -> None:
                if also is not None:
                    also(connection)
                os._exit(9)
            return super().apply(envelopes, also=also_then_die, **options)

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        messages = stream.poll()
        if not messages:
            continue
        Path(batch_file).write_text(json.dumps(sorted(json.loads(m.value)["position"] for m in messages)))
        projector = Projector(con, parts=dying_parts()) if mode == "handler" else DyingBeforeCommit(con)
        stream.apply(projector, messages)
    sys.exit(0)  # reaching here means the crash never happened


# -- 4. killed mid-batch -----------------------------------------------------------------------------

# The crash is the projector's, not the client's: both modes on kafka-python, one on confluent.
@pytest.mark.parametrize(("kafka_client", "mode"), [("kafka-python", "handler"), ("kafka-python", "before-commit"),
                                                    ("confluent", "before-commit")], indirect=["kafka_client"])
def test_a_projector_killed_mid_batch_keeps_none_of_it_and_resumes(
        kafka_settings: Settings, tmp_path: Path, mode: str) -> None:
    home, other = kafka_settings.home, tmp_path / "from-kafka"
    state = tmp_path / "relay-state.json"
    # Given a Kafka-fed read model that projected the first half of the story
    run_in_process(home, BEFORE_SUBJECTS)
    first = store_head(kafka_settings)
    relay_all(kafka_settings, state)
    assert ok(project_from_kafka(kafka_settings, other))["position"] == first
    assert read_model_facts(other)["offsets"] == {(kafka_settings.kafka_events_topic, 0): first}

    # and the rest of the story on the topic
    run_in_process(home, SUBJECTS_ON)
    head = store_head(kafka_settings)
    relay_all(kafka_settings, state)
    events_on_topic(kafka_settings, range(1, head + 1))
    before = read_model_facts(other)

    # When a projector process dies in the middle of its next batch
    batch_file = tmp_path / "batch.json"
    child_settings = kafka_settings.model_copy(update={"home": other})
    done = run_python_child(
        "import sys; from tests.integration.test_kafka_projector_faults import child_project_kafka_and_die; "
        "child_project_kafka_and_die(*sys.argv[1:])", child_settings.model_dump_json(), mode, str(batch_file))
    assert done.returncode == 9, f"the child did not die in its batch (exit {done.returncode}):\n{done.stderr}"
    batch = json.loads(batch_file.read_text())
    assert batch and min(batch) > first, f"the dying batch {batch} should hold only new positions"

    # Then the read model holds none of that batch: rows, tracking and offsets are as before
    after = read_model_facts(other)
    assert not set(after["positions"]) & set(batch), "a batch that never committed left events behind"
    assert after == before

    # When `project --from kafka` runs again, it resumes from the stored offsets
    resumed = project_from_kafka(kafka_settings, other)
    assert ok(resumed)["position"] == head

    # Then every position was applied once, and the read model equals the store-fed one
    facts = read_model_facts(other)
    assert_each_position_once(facts, head)
    assert facts["offsets"] == {(kafka_settings.kafka_events_topic, 0): head}
    assert (head, facts["fingerprint"]) == store_fingerprint(kafka_settings, tmp_path / "store.duckdb")


# -- 5. a corrupt message ----------------------------------------------------------------------------

@on_both_kafka_clients
def test_a_corrupt_message_is_dead_lettered_and_stops_the_projector_at_the_same_place(
        kafka_settings: Settings, tmp_path: Path) -> None:
    other = tmp_path / "from-kafka"
    # Given a message that is not an envelope, after the valid ones, and more valid ones after it
    valid, head = a_bad_message_between_story_halves(kafka_settings, tmp_path / "relay-state.json")
    bad_offset = valid  # one message per position so far, offsets from 0

    reports = []
    for attempt in (1, 2):
        # When the topic is projected into a fresh home (and again)
        projected = project_from_kafka(kafka_settings, other)

        # Then it stops with exit 5, naming the offset, after applying exactly the valid ones before it
        assert projected.code == 5, f"attempt {attempt}: exit {projected.code}: {projected.stderr}"
        error = error_of(projected)
        assert error["code"] == "corrupt_message"
        assert f"offset {bad_offset}" in error["message"]
        assert error["details"]["offset"] == bad_offset and error["details"]["partition"] == 0
        facts = read_model_facts(other)
        assert_each_position_once(facts, valid)
        assert facts["offsets"] == {(kafka_settings.kafka_events_topic, 0): bad_offset}
        reports.append((error, facts))
    assert reports[0] == reports[1], "a second run must stop at the same place, having changed nothing"

    # and the bad message is on the dead-letter topic, with where it came from
    dead = read_topic(kafka_settings, kafka_settings.kafka_dlq_topic, lambda m: len(m) >= 2, what="2 dead letters")
    for message in dead:
        letter = json.loads(message.value)
        assert set(letter) >= {"reason", "topic", "partition", "offset", "value_base64"}
        assert (letter["topic"], letter["partition"], letter["offset"]) == \
            (kafka_settings.kafka_events_topic, 0, bad_offset)
        assert base64.b64decode(letter["value_base64"]) == b"not json"
        assert "envelope" in letter["reason"]


# -- 6. an envelope that is altered or of another schema ---------------------------------------------

def next_envelope_altered(last: dict[str, Any]) -> dict[str, Any]:
    """The envelope after `last`, its data altered after it was hashed (its hash kept)."""
    return {**last, "position": last["position"] + 1, "prev_position": last["position"],
            "prev_hash": last["hash"], "data": {**last["data"], "forged": True}}


def next_envelope_of_another_schema(last: dict[str, Any]) -> dict[str, Any]:
    return {**next_envelope_altered(last), "schema": "toolcat.event/v2"}


@pytest.mark.parametrize(("spoil", "reason"), [
    (next_envelope_altered, "does not match its hash"),
    (next_envelope_of_another_schema, "schema is 'toolcat.event/v2'"),
], ids=["altered", "another schema"])
def test_an_altered_envelope_or_one_of_another_schema_is_dead_lettered_with_its_reason(
        kafka_settings: Settings, tmp_path: Path, spoil: Any, reason: str) -> None:
    home = kafka_settings.home
    run_in_process(home, BEFORE_SUBJECTS)
    valid = store_head(kafka_settings)
    relay_all(kafka_settings, tmp_path / "relay-state.json")
    published = events_on_topic(kafka_settings, range(1, valid + 1))
    # Given, after the valid envelopes, one spoiled
    last = max((json.loads(m.value) for m in published), key=lambda e: e["position"])
    produce_raw(kafka_settings, kafka_settings.kafka_events_topic, json.dumps(spoil(last)).encode(), b"spoiled")

    # When the topic is projected into a fresh home (in this process)
    other = kafka_settings.model_copy(update={"home": tmp_path / "from-kafka"})
    with pytest.raises(CorruptMessage) as raised:
        run_command(["project", "--from", "kafka", "--idle-seconds", "2"], other)

    # Then it stops at the spoiled message with the reason, having applied every valid envelope
    assert (raised.value.code, raised.value.details["offset"]) == ("corrupt_message", valid)
    assert reason in raised.value.message
    assert_each_position_once(read_model_facts(other.home), valid)
    # and the spoiled message is on the dead-letter topic with the same reason
    dead = read_topic(kafka_settings, kafka_settings.kafka_dlq_topic, lambda m: len(m) >= 1, what="a dead letter")
    letter = json.loads(dead[0].value)
    assert reason in letter["reason"] and letter["offset"] == valid
