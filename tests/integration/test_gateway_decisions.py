"""The gateway's decision log: rows appended in batches to `gateway_decisions` beside the history tables,
kept by a rebuild, and sent to Kafka `toolcat.decisions` when Kafka is on."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import duckdb

from infra.mcp.gateway.decisions import DecisionLog, decision, kafka_publisher
from infra.settings import Settings
from infra.wiring import open_read_model
from tests.integration.kafka_support import read_topic
from tests.support import run_in_process, toolcat_environ, toolcat_in_process

DENIED = {"subject": "agent:triage", "token": "triage-bot", "asked": "mcp.time.get_current_time",
          "canonical_id": "mcp.time.get_current_time", "allowed": False, "reason": "not_in_set", "set_position": 7,
          "latency_ms": 0.4, "evidence": {"alias": None}}


def test_decisions_gathered_are_written_as_one_batch_and_a_rebuild_keeps_them(sqlite_settings: Settings) -> None:
    home = sqlite_settings.home
    run_in_process(home, [["unit", "create", "support"], ["agent", "create", "triage", "--unit", "support"]])
    con = open_read_model(sqlite_settings)
    log = DecisionLog(con.cursor)
    # Given two decisions recorded (nothing is written while a call is answered)
    log.record(decision(**DENIED, decided_at=datetime(2026, 11, 28, tzinfo=timezone.utc)))
    log.record(decision(**{**DENIED, "allowed": True, "reason": "in_set", "set_position": 6}))
    assert con.execute("SELECT count(*) FROM gateway_decisions").fetchone() == (0,)
    # When the log flushes, then both are rows, in one batch, JSON columns as JSON
    assert log.flush() == 2
    rows = con.execute("SELECT allowed, reason, set_position, evidence::VARCHAR, arguments FROM gateway_decisions "
                       "ORDER BY set_position").fetchall()
    assert rows == [(True, "in_set", 6, '{"alias":null}', None), (False, "not_in_set", 7, '{"alias":null}', None)]
    log.stop()
    con.close()
    # And a rebuild of the read model keeps them (they are not derived from the events)
    with toolcat_environ("tester"):
        assert toolcat_in_process(home, "--json", "rebuild").code == 0
    with duckdb.connect(str(sqlite_settings.read_model_path), read_only=True) as after:
        assert after.execute("SELECT count(*) FROM gateway_decisions").fetchone() == (2,)


def test_decisions_go_to_kafka_when_kafka_is_on(kafka_settings: Settings) -> None:
    settings = kafka_settings.model_copy(update={"kafka_decisions_topic": kafka_settings.kafka_events_topic + ".d"})
    publish = kafka_publisher(settings)
    assert publish is not None and kafka_publisher(settings.model_copy(update={"kafka_bootstrap": None})) is None
    log = DecisionLog(None, publish)
    log.record(decision(**DENIED))
    assert log.flush() == 1
    [message] = read_topic(settings, settings.kafka_decisions_topic, lambda found: len(found) >= 1,
                           what="the decision")
    assert message.key == b"agent:triage"
    assert {k: v for k, v in json.loads(message.value).items() if k in ("asked", "allowed", "reason")} == {
        "asked": "mcp.time.get_current_time", "allowed": False, "reason": "not_in_set"}
