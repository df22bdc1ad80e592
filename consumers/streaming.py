"""The streaming projector: Kafka `toolcat.events` → the same projector the store path uses.

Offsets are stored in the read model in the same DuckDB transaction as the rows (and committed to the
group afterwards, for lag monitoring), so a restart resumes exactly where the read model is.
"""
from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any

import duckdb
from pydantic import ValidationError

from domain.errors import IntegrityFailure
from projections.envelope import Envelope
from projections.projector import Projector, Tracking
from projections.rows import insert_rows, run


class CorruptMessage(IntegrityFailure):
    code = "corrupt_message"


def stored_offsets(con: duckdb.DuckDBPyConnection, topic: str) -> dict[int, int]:
    return dict(run(con, "SELECT partition, next_offset FROM kafka_offsets WHERE topic = $t", {"t": topic}))


def _save_offsets(topic: str, offsets: dict[int, int]) -> Callable[[duckdb.DuckDBPyConnection], None]:
    def save(con: duckdb.DuckDBPyConnection) -> None:
        run(con, "DELETE FROM kafka_offsets WHERE topic = $t AND partition IN (SELECT unnest($p::INTEGER[]))",
            {"t": topic, "p": list(offsets)})
        insert_rows(con, "kafka_offsets", [{"topic": topic, "partition": p, "next_offset": o}
                                           for p, o in offsets.items()])
    return save


class StreamProjector:
    def __init__(self, consumer: Any, topic: str, dead_letters: Callable[[Any, str], None]) -> None:
        self.consumer, self.topic, self.dead_letters = consumer, topic, dead_letters
        self.partitions: list[Any] = []

    def assign(self, con: duckdb.DuckDBPyConnection, wait_seconds: float = 10.0) -> None:
        """Read every partition of the topic from where this read model stopped."""
        from kafka import TopicPartition
        deadline = time.monotonic() + wait_seconds
        while not (numbers := self.consumer.partitions_for_topic(self.topic)):
            if time.monotonic() > deadline:
                raise IntegrityFailure(f"topic {self.topic} does not exist or has no partitions")
            time.sleep(0.2)
        self.partitions = [TopicPartition(self.topic, n) for n in sorted(numbers)]
        self.consumer.assign(self.partitions)
        offsets = stored_offsets(con, self.topic)
        for partition in self.partitions:
            if partition.partition in offsets:
                self.consumer.seek(partition, offsets[partition.partition])
            else:
                self.consumer.seek_to_beginning(partition)

    def poll(self, timeout_ms: int = 500) -> list[Any]:
        polled = self.consumer.poll(timeout_ms=timeout_ms)
        return [message for batch in polled.values() for message in batch]

    def apply(self, projector: Projector, messages: list[Any]) -> Tracking:
        """Parse, order by position, apply in one transaction with the offsets, then commit them."""
        envelopes, corrupt = [], None
        for message in messages:
            try:
                envelopes.append(Envelope.model_validate_json(message.value))
            except (ValidationError, ValueError, TypeError) as error:
                corrupt = (message, f"not a toolcat.event/v1 envelope: {error}")
                break
        offsets: dict[int, int] = {}
        for message in messages[:len(envelopes)]:
            offsets[message.partition] = max(offsets.get(message.partition, 0), message.offset + 1)
        envelopes.sort(key=lambda e: e.position)
        tracking = projector.apply(envelopes, also=_save_offsets(self.topic, offsets)) if envelopes \
            else projector.tracking()
        if offsets:
            self._commit(offsets)
        if corrupt:
            message, reason = corrupt
            self.dead_letters(message, reason)
            raise CorruptMessage(f"message at {message.topic}[{message.partition}] offset {message.offset} "
                                 f"{reason}; sent to the dead-letter topic; stopped after position "
                                 f"{tracking.position}", partition=message.partition, offset=message.offset,
                                 position=tracking.position)
        return tracking

    def _commit(self, offsets: dict[int, int]) -> None:
        from kafka import OffsetAndMetadata, TopicPartition
        try:
            self.consumer.commit({TopicPartition(self.topic, p): OffsetAndMetadata(o, "", -1)
                                  for p, o in offsets.items()})
        except Exception:  # noqa: BLE001 - the read model holds the offsets; the group's copy is for lag only
            pass


def dead_letter_value(message: Any, reason: str) -> bytes:
    raw = message.value if isinstance(message.value, bytes) else str(message.value).encode()
    return json.dumps({"reason": reason, "topic": message.topic, "partition": message.partition,
                       "offset": message.offset, "value_base64": base64.b64encode(raw).decode()}).encode()
