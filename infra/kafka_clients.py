"""Kafka clients built from settings, when asked: kafka-python (the default) or confluent-kafka
(`TOOLCAT_KAFKA_CLIENT=confluent`, the `fast-kafka` extra), each behind the interface of
`consumers/kafka_io.py`. Every non-default client setting says why."""
from __future__ import annotations

import sys

from typing import Any

from consumers.kafka_io import Consumer, Producer
from domain.errors import Unavailable
from infra.settings import Settings

# One poll feeds one projector batch: large enough that per-batch costs (the DuckDB transaction, the
# effective-set refresh) are spread over many events, small enough to keep a batch's memory bounded.
POLL_RECORDS = 5000


def producer(settings: Settings) -> Producer:
    if settings.kafka_client == "confluent":
        return _confluent().producer(settings)
    from consumers.kafka_io import KafkaPythonProducer
    from kafka import KafkaProducer
    return KafkaPythonProducer(_connect(settings, lambda: KafkaProducer(
        **_common(settings),
        acks="all",                 # an event counts as published only once every in-sync replica has it
        enable_idempotence=True,    # broker-side dedup of retried batches: no duplicates from retries
        max_in_flight_requests_per_connection=5,  # the most idempotence allows while keeping order
        # Let a page of envelopes fill large batches (the relay's flush sends the last at once): measured
        # on 20,000 envelopes, 0.50-0.58 s CPU against 1.03-1.06 s at kafka-python's defaults (linger 0,
        # 16 KB); 1 MB batches or a 20 ms linger were no better.
        linger_ms=5,
        batch_size=256 * 1024,
        request_timeout_ms=10_000,  # fail fast enough to report a stopped broker within the retry budget
        max_block_ms=10_000,        # never hang forever waiting for metadata of an unreachable broker
    )))


def consumer(settings: Settings, group_id: str | None) -> Consumer:
    if settings.kafka_client == "confluent":
        return _confluent().consumer(settings, group_id, POLL_RECORDS)
    from consumers.kafka_io import KafkaPythonConsumer
    from kafka import KafkaConsumer
    return KafkaPythonConsumer(_connect(settings, lambda: KafkaConsumer(
        **_common(settings),
        group_id=group_id,
        enable_auto_commit=False,    # offsets are committed only after the DuckDB transaction commits
        auto_offset_reset="earliest",  # a new consumer reads the whole history
        # Group timings from the settings; kafka-python wants the request timeout (below) above the session's.
        session_timeout_ms=settings.kafka_session_timeout_ms,
        heartbeat_interval_ms=max(1000, settings.kafka_session_timeout_ms // 5),
        # Fewer, larger polls (the projector gathers them into batches: consumers/streaming.py): 0.11 s
        # CPU for 20,000 envelopes against 0.15-0.17 s at the default 500.
        max_poll_records=POLL_RECORDS,
        fetch_max_wait_ms=50,        # new events become visible quickly instead of after up to 500 ms
        # Fetch sizes stay kafka-python's: 256 KB, 4 MB and 8 MB partition fetches (with a 64 MB fetch_max)
        # measured the same CPU (0.10-0.15 s per 20,000 envelopes). What does matter is the `crc32c`
        # package (a dependency): without it kafka-python checks CRCs in pure Python, ~8x slower.
        request_timeout_ms=max(30_000, settings.kafka_session_timeout_ms + 5000),
    )))


def ensure_topics(settings: Settings) -> None:
    """Create the topics toolcat uses when missing (the changelog compacted: one value per subject), then
    check the ones found: a topic created by someone else (a consumer started first, a broker's
    auto-creation) may have other partitions or lack compaction, and toolcat would use it without a word.
    A wrong one stops the command (exit 6) with the command that fixes it, unless
    TOOLCAT_KAFKA_ACCEPT_TOPICS=true, which proceeds with a warning."""
    _create_missing(settings)
    problems = topic_problems(settings, describe_topics(settings))
    if not problems:
        return
    if settings.kafka_accept_topics:
        for problem in problems:
            print(f"toolcat: warning: {problem} (proceeding: TOOLCAT_KAFKA_ACCEPT_TOPICS=true)", file=sys.stderr)
        return
    raise TopicMismatch("; ".join(problems) + ". Or set TOOLCAT_KAFKA_ACCEPT_TOPICS=true to proceed all the same",
                        problems=problems)


class TopicMismatch(Unavailable):
    """A topic toolcat uses exists with other partitions or configs than it needs (exit 6)."""

    code = "topic_mismatch"


def describe_topics(settings: Settings) -> dict[str, tuple[int, dict[str, str] | None]]:
    """(partitions, configs) of each topic toolcat uses, as the broker reports them; configs None where the
    broker does not report them."""
    if settings.kafka_client == "confluent":
        return _confluent().describe_topics(settings)  # type: ignore[no-any-return]
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType
    names = [name for name, _, _ in wanted_topics(settings)]
    admin = _connect(settings, lambda: KafkaAdminClient(**_common(settings), request_timeout_ms=10_000))
    try:
        found = {t["name"]: len(t["partitions"]) for t in admin.describe_topics(names)}
        described: dict[str, tuple[int, dict[str, str] | None]] = {}
        for name, partitions in found.items():
            try:
                configs = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)], config_filter="all")
                values = {k: str(v.get("value")) for k, v in configs.get("topic", {}).get(name, {}).items()}
            except Exception:  # noqa: BLE001 - a broker that does not report configs: partitions are still checked
                values = None
            described[name] = (partitions, values)
        return described
    finally:
        admin.close()


def topic_problems(settings: Settings, described: dict[str, tuple[int, dict[str, str] | None]]) -> list[str]:
    """What is wrong with the topics as described, each with the command that fixes it."""
    bootstrap = settings.kafka_bootstrap
    problems = []
    for name, partitions, configs in wanted_topics(settings):
        if name not in described:
            continue
        found, values = described[name]
        if found != partitions:
            problems.append(
                f"topic {name} has {found} partition(s), toolcat needs {partitions} (the order of its messages "
                f"depends on it): delete it with 'kafka-topics.sh --bootstrap-server {bootstrap} --delete --topic "
                f"{name}' and run the command again, which creates it as needed")
        policy = configs.get("cleanup.policy")
        reported = values.get("cleanup.policy") if values is not None else None
        if policy and reported is not None and policy not in reported.split(","):
            problems.append(
                f"topic {name} has cleanup.policy={reported}, toolcat needs {policy}: run 'kafka-configs.sh "
                f"--bootstrap-server {bootstrap} --alter --entity-type topics --entity-name {name} --add-config "
                f"cleanup.policy={policy}'")
    return problems


def _create_missing(settings: Settings) -> None:
    if settings.kafka_client == "confluent":
        _confluent().ensure_topics(settings)
        return
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError
    admin = _connect(settings, lambda: KafkaAdminClient(**_common(settings), request_timeout_ms=10_000))
    try:
        existing = set(admin.list_topics())
        missing = [NewTopic(name, partitions, settings.kafka_replication_factor, topic_configs=configs)
                   for name, partitions, configs in wanted_topics(settings) if name not in existing]
        if missing:
            try:
                admin.create_topics(missing)
            except TopicAlreadyExistsError:
                pass  # another process created it between our look and our create
    finally:
        admin.close()


def wanted_topics(settings: Settings) -> list[tuple[str, int, dict[str, str]]]:
    """(name, partitions, topic configs) of the three topics toolcat uses."""
    return [(settings.kafka_events_topic, settings.kafka_partitions, {}),
            (settings.kafka_effective_topic, 1, {"cleanup.policy": "compact"}),
            (settings.kafka_dlq_topic, 1, {})]


def is_broker_error(error: Exception) -> bool:
    """Whether `error` means "the broker did not take it" (worth retrying), from either client library."""
    from kafka.errors import KafkaError
    if isinstance(error, TopicMismatch):  # a wrong topic stays wrong: retrying would hide it
        return False
    if isinstance(error, (KafkaError, Unavailable, TimeoutError, ConnectionError)):
        return True
    try:
        from confluent_kafka import KafkaException
    except ImportError:
        return False
    return isinstance(error, KafkaException)


def bootstrap_servers(settings: Settings) -> str:
    if not settings.kafka_bootstrap:
        raise Unavailable("Kafka is not configured: set TOOLCAT_KAFKA_BOOTSTRAP=host:port "
                          "(or start one with 'toolcat dev-broker')")
    return settings.kafka_bootstrap


def bootstrap_seconds(settings: Settings) -> float:
    """How long a new client may look for the broker: a stopped one is reported within the retry budget."""
    return min(30.0, max(1.0, settings.kafka_retry_seconds / 2))


def unreachable(settings: Settings) -> Unavailable:
    return Unavailable(f"no Kafka broker reachable at {settings.kafka_bootstrap}")


def _confluent() -> Any:
    try:
        import confluent_kafka  # noqa: F401 - only to say what is missing
    except ImportError as error:
        raise Unavailable("TOOLCAT_KAFKA_CLIENT=confluent needs the confluent-kafka package: "
                          "pip install 'toolcat[fast-kafka]'") from error
    from infra import kafka_confluent
    return kafka_confluent


def _common(settings: Settings) -> dict[str, Any]:
    options: dict[str, Any] = {
        "bootstrap_servers": bootstrap_servers(settings).split(","),
        "client_id": settings.kafka_client_id,
        "security_protocol": settings.kafka_security_protocol,
        # A stopped broker is reported within the retry budget instead of after kafka-python's 30 s default.
        "bootstrap_timeout_ms": int(bootstrap_seconds(settings) * 1000),
    }
    optional = {"sasl_mechanism": settings.kafka_sasl_mechanism,
                "sasl_plain_username": settings.kafka_sasl_username,
                "sasl_plain_password": settings.kafka_sasl_password,
                "ssl_cafile": settings.kafka_ssl_cafile, "ssl_certfile": settings.kafka_ssl_certfile,
                "ssl_keyfile": settings.kafka_ssl_keyfile}
    options.update({k: v for k, v in optional.items() if v})
    return options


def _connect(settings: Settings, build: Any) -> Any:
    from kafka.errors import KafkaError
    try:
        return build()
    except KafkaError as error:
        raise unreachable(settings) from error
