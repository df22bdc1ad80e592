"""confluent-kafka (librdkafka) clients from settings, for `TOOLCAT_KAFKA_CLIENT=confluent`.
Every setting that differs from librdkafka's default says why."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from consumers.confluent_io import ConfluentConsumer, ConfluentProducer
from domain.errors import Unavailable
from infra.kafka_clients import bootstrap_seconds, bootstrap_servers, unreachable, wanted_topics
from infra.settings import Settings


def producer(settings: Settings) -> ConfluentProducer:
    from confluent_kafka import Producer
    return ConfluentProducer(_connect(settings, lambda: Producer({
        **_common(settings),
        "acks": "all",                 # an event counts as published only once every in-sync replica has it
        # Broker-side dedup of retried batches: no duplicates from retries. librdkafka then keeps order
        # with at most 5 requests in flight. linger.ms (5) and batch.size stay librdkafka's: measured best.
        "enable.idempotence": True,
        # A page of envelopes is a few MB; a bounded local queue keeps a large changelog publish from
        # holding hundreds of MB (a full queue makes `produce` wait for acknowledgements instead).
        "queue.buffering.max.kbytes": 64 * 1024,
        # A message the broker has not taken within 10 s is reported (as kafka-python's request timeout),
        # so the relay notices a stopped broker and retries from its saved position.
        "message.timeout.ms": 10_000,
    })))


def consumer(settings: Settings, group_id: str | None, max_records: int) -> ConfluentConsumer:
    from confluent_kafka import Consumer
    return ConfluentConsumer(_connect(settings, lambda: Consumer({
        **_common(settings),
        # confluent-kafka wants a group even for assigned partitions; nothing is committed under the
        # stand-in (only the projector, which has its own group, commits).
        "group.id": group_id or f"{settings.kafka_client_id}-reader",
        "enable.auto.commit": False,   # offsets are committed only after the DuckDB transaction commits
        "auto.offset.reset": "earliest",  # a new consumer reads the whole history
        # fetch.min.bytes stays 1: a broker answers a fetch as soon as one new event is there (latency).
        # Fetch and prefetch sizes (max.partition.fetch.bytes, queued.max.messages.kbytes) stay
        # librdkafka's: larger or smaller ones measured no faster here.
        "fetch.wait.max.ms": 50,       # a broker that holds empty fetches (Tansu) releases them after 50 ms
    })), max_records)


def ensure_topics(settings: Settings) -> None:
    """Create the topics toolcat uses when missing (the changelog compacted: one value per subject)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = _connect(settings, lambda: AdminClient(_common(settings)))
    existing = set(admin.list_topics(timeout=10).topics)
    missing = [NewTopic(name, partitions, settings.kafka_replication_factor, config=configs)
               for name, partitions, configs in wanted_topics(settings) if name not in existing]
    if not missing:
        return
    for name, created in admin.create_topics(missing, request_timeout=10).items():
        try:
            created.result(timeout=15)
        except KafkaException as error:
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:  # another process was first: fine
                raise Unavailable(f"cannot create topic {name}: {error}") from error


def describe_topics(settings: Settings) -> dict[str, tuple[int, dict[str, str] | None]]:
    """(partitions, configs) of each topic toolcat uses that exists (see kafka_clients.describe_topics)."""
    from confluent_kafka.admin import AdminClient, ConfigResource
    admin = _connect(settings, lambda: AdminClient(_common(settings)))
    topics = admin.list_topics(timeout=10).topics
    described: dict[str, tuple[int, dict[str, str] | None]] = {}
    for name, _, _ in wanted_topics(settings):
        if name not in topics:
            continue
        try:
            [future] = admin.describe_configs([ConfigResource("topic", name)], request_timeout=10).values()
            values: dict[str, str] | None = {k: str(v.value) for k, v in future.result(timeout=15).items()}
        except Exception:  # noqa: BLE001 - a broker that does not report configs: partitions are still checked
            values = None
        described[name] = (len(topics[name].partitions), values)
    return described


def _common(settings: Settings) -> dict[str, Any]:
    options: dict[str, Any] = {
        "bootstrap.servers": bootstrap_servers(settings),
        "client.id": settings.kafka_client_id,
        "security.protocol": settings.kafka_security_protocol,
        # librdkafka's own log lines go through Python logging (as kafka-python's do), not straight to stderr.
        "logger": logging.getLogger("confluent_kafka"),
        "log.connection.close": False,  # brokers close idle connections; that is not worth a log line
    }
    optional = {"sasl.mechanism": settings.kafka_sasl_mechanism,
                "sasl.username": settings.kafka_sasl_username, "sasl.password": settings.kafka_sasl_password,
                "ssl.ca.location": settings.kafka_ssl_cafile,
                "ssl.certificate.location": settings.kafka_ssl_certfile,
                "ssl.key.location": settings.kafka_ssl_keyfile}
    options.update({k: v for k, v in optional.items() if v})
    return options


def _connect(settings: Settings, build: Callable[[], Any]) -> Any:
    """The client once the broker answered: librdkafka connects lazily, so ask it for metadata now, and
    report a stopped broker within the retry budget as kafka-python's bootstrap does."""
    from confluent_kafka import KafkaException
    client = build()
    try:
        client.list_topics(timeout=bootstrap_seconds(settings))
        return client
    except KafkaException as error:
        if hasattr(client, "close"):
            client.close()
        client = None  # the traceback must not keep alive a client that goes on reconnecting
        raise unreachable(settings) from error
