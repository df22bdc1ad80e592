"""Kafka clients built from settings, when asked. Every non-default setting says why."""
from __future__ import annotations

from typing import Any

from domain.errors import Unavailable
from infra.settings import Settings


def _common(settings: Settings) -> dict[str, Any]:
    if not settings.kafka_bootstrap:
        raise Unavailable("Kafka is not configured: set TOOLCAT_KAFKA_BOOTSTRAP=host:port "
                          "(or start one with 'toolcat dev-broker')")
    options: dict[str, Any] = {
        "bootstrap_servers": settings.kafka_bootstrap.split(","),
        "client_id": settings.kafka_client_id,
        "security_protocol": settings.kafka_security_protocol,
    }
    optional = {"sasl_mechanism": settings.kafka_sasl_mechanism,
                "sasl_plain_username": settings.kafka_sasl_username,
                "sasl_plain_password": settings.kafka_sasl_password,
                "ssl_cafile": settings.kafka_ssl_cafile, "ssl_certfile": settings.kafka_ssl_certfile,
                "ssl_keyfile": settings.kafka_ssl_keyfile}
    options.update({k: v for k, v in optional.items() if v})
    # A stopped broker is reported within the retry budget instead of after kafka-python's 30 s default.
    options["bootstrap_timeout_ms"] = int(min(30.0, max(1.0, settings.kafka_retry_seconds / 2)) * 1000)
    return options


def producer(settings: Settings) -> Any:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError
    try:
        return KafkaProducer(
            **_common(settings),
            acks="all",                 # an event counts as published only once every in-sync replica has it
            enable_idempotence=True,    # broker-side dedup of retried batches: no duplicates from retries
            max_in_flight_requests_per_connection=5,  # the most idempotence allows while keeping order
            linger_ms=5,                # let a page of events fill batches instead of one request each
            batch_size=256 * 1024,      # pages of envelopes are a few hundred KB; fewer, larger requests
            request_timeout_ms=10_000,  # fail fast enough to report a stopped broker within the retry budget
            max_block_ms=10_000,        # never hang forever waiting for metadata of an unreachable broker
        )
    except KafkaError as error:
        raise Unavailable(f"no Kafka broker reachable at {settings.kafka_bootstrap}") from error


def consumer(settings: Settings, group_id: str | None) -> Any:
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError
    try:
        return KafkaConsumer(
            **_common(settings),
            group_id=group_id,
            enable_auto_commit=False,    # offsets are committed only after the DuckDB transaction commits
            auto_offset_reset="earliest",  # a new consumer reads the whole history
            session_timeout_ms=settings.kafka_session_timeout_ms,
            heartbeat_interval_ms=max(1000, settings.kafka_session_timeout_ms // 5),
            max_poll_records=5000,       # one poll feeds one projector batch
            fetch_max_wait_ms=50,        # new events become visible quickly instead of after up to 500 ms
            fetch_max_bytes=64 * 1024 * 1024,
            request_timeout_ms=max(30_000, settings.kafka_session_timeout_ms + 5000),
        )
    except KafkaError as error:
        raise Unavailable(f"no Kafka broker reachable at {settings.kafka_bootstrap}") from error


def ensure_topics(settings: Settings) -> None:
    """Create the topics toolcat uses when missing (the changelog compacted: one value per subject)."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import KafkaError, TopicAlreadyExistsError
    try:
        admin = KafkaAdminClient(**_common(settings), request_timeout_ms=10_000)
    except KafkaError as error:
        raise Unavailable(f"no Kafka broker reachable at {settings.kafka_bootstrap}") from error
    try:
        existing = set(admin.list_topics())
        wanted = [
            NewTopic(settings.kafka_events_topic, settings.kafka_partitions, settings.kafka_replication_factor),
            NewTopic(settings.kafka_effective_topic, 1, settings.kafka_replication_factor,
                     topic_configs={"cleanup.policy": "compact"}),
            NewTopic(settings.kafka_dlq_topic, 1, settings.kafka_replication_factor),
        ]
        missing = [t for t in wanted if t.name not in existing]
        if missing:
            try:
                admin.create_topics(missing)
            except TopicAlreadyExistsError:
                pass  # another process created it between our look and our create
    finally:
        admin.close()
