"""Topics are checked at start: a topic toolcat uses that someone else created with other partitions, or a
changelog without compaction (where the broker reports configs), stops relay and projector with exit 6 and
the command that fixes it, unless TOOLCAT_KAFKA_ACCEPT_TOPICS=true says to proceed."""
from __future__ import annotations

from typing import Any

from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from infra.settings import Settings
from tests.integration.kafka_support import toolcat
from tests.support import ok, run_in_process

STORY = [["init", "--policy", "tyrum"], ["unit", "create", "eng"]]


def create_topic(settings: Settings, name: str, partitions: int, configs: dict[str, str] | None = None) -> None:
    admin = KafkaAdminClient(bootstrap_servers=[settings.kafka_bootstrap])
    try:
        admin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs or {})])
    finally:
        admin.close()


def refused(run: Any, *needles: str) -> str:
    assert run.code == 6, (run.code, run.stdout, run.stderr)
    error = run.error
    assert error["code"] == "topic_mismatch", error
    for needle in needles:
        assert needle in error["message"], error["message"]
    return str(error["message"])


def test_a_changelog_made_with_four_partitions_stops_projector_and_relay(kafka_settings: Settings) -> None:
    home, topic = kafka_settings.home, kafka_settings.kafka_effective_topic
    # given a consumer auto-created the changelog with four partitions before toolcat ran
    create_topic(kafka_settings, topic, 4, {"cleanup.policy": "compact"})
    run_in_process(home, STORY)
    # when the projector and the relay start, then both stop, naming the topic and the fix
    refused(toolcat("project", home=home, settings=kafka_settings), topic, "4 partition(s)",
            f"kafka-topics.sh --bootstrap-server {kafka_settings.kafka_bootstrap} --delete --topic {topic}")
    refused(toolcat("relay", home=home, settings=kafka_settings), topic)
    # when a setting says to proceed, then the projector runs (with a warning)
    accepted = toolcat("project", home=home, settings=kafka_settings, env={"TOOLCAT_KAFKA_ACCEPT_TOPICS": "true"})
    assert ok(accepted)["position"] > 0
    assert "TOOLCAT_KAFKA_ACCEPT_TOPICS" in accepted.stderr


def test_a_changelog_without_compaction_is_refused_with_the_config_command(kafka_settings: Settings) -> None:
    home, topic = kafka_settings.home, kafka_settings.kafka_effective_topic
    create_topic(kafka_settings, topic, 1, {"cleanup.policy": "delete"})
    run_in_process(home, STORY)
    refused(toolcat("project", home=home, settings=kafka_settings), "cleanup.policy=delete",
            f"--entity-name {topic} --add-config cleanup.policy=compact")
