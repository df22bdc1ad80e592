"""A home whose read model is fed from Kafka (`project --from kafka`, `serve --from kafka`) is a replica:
its history lives in another catalog's store. A write to it would start a second, unrelated history in
the home's empty embedded store (and `audit verify` would then call the replica's events altered), so
writes are refused. A marker file in the home says which topic it replicates."""
from __future__ import annotations

import json

from domain.errors import UsageError
from infra.settings import Settings

MARKER = "replica.json"


class ReadOnlyReplica(UsageError):
    code = "read_only_replica"


def mark_replica(settings: Settings) -> None:
    """Record that this home replicates the events topic (only for the embedded store in the home: with
    TOOLCAT_EVENT_STORE_URL writes go to that shared store, which is the catalog itself)."""
    if settings.event_store_url:
        return
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / MARKER).write_text(json.dumps({"source": "kafka", "topic": settings.kafka_events_topic}))


def refuse_writes_to_replica(settings: Settings) -> None:
    marker = settings.home / MARKER
    if settings.event_store_url or not marker.exists():
        return
    topic = json.loads(marker.read_text()).get("topic")
    raise ReadOnlyReplica(f"{settings.home} is a read-only replica fed from Kafka topic {topic}: write to the "
                          "catalog whose store publishes that topic (its home, or its toolcat serve)",
                          home=str(settings.home), topic=topic)
