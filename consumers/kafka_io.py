"""The small Kafka interface of the consumers and the relay, and its kafka-python implementation.

Either client library sits behind it (`TOOLCAT_KAFKA_CLIENT`): kafka-python, here, or confluent-kafka
(`consumers/confluent_io.py`). `infra/kafka_clients.py` configures and builds them; the code that uses
them names no client library. A message the broker did not acknowledge is reported as `Unavailable`.
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, Protocol

from domain.errors import Unavailable

KeyValue = tuple[bytes | None, bytes]


class Record(NamedTuple):
    """One consumed message. kafka-python's own records have the same attributes and are used as is."""
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


class Producer(Protocol):
    client: Any  # the library's own producer (the bench measures it alone)

    def publish(self, topic: str, messages: Iterable[KeyValue], timeout: float = 30) -> int:
        """Send every message, wait for the broker; returns the count once every one is acknowledged."""

    def close(self, timeout: float = 5) -> None: ...


class Consumer(Protocol):
    client: Any  # the library's own consumer (the bench measures it alone)

    def partitions(self, topic: str) -> list[int]:
        """The topic's partition numbers, sorted; empty when the broker does not know the topic."""

    def assign(self, topic: str, partitions: list[int], offsets: Mapping[int, int]) -> None:
        """Read these partitions, each from its offset in `offsets` or else from the beginning."""

    def poll(self, timeout_ms: int) -> list[Record]: ...

    def commit(self, topic: str, offsets: Mapping[int, int]) -> None:
        """Record the group's next offsets (asynchronously: the read model holds the real ones)."""

    def close(self) -> None: ...


def partitions_of(consumer: Consumer, topic: str, wait_seconds: float) -> list[int]:
    """The topic's partitions, waiting up to `wait_seconds` for a topic still being created."""
    deadline = time.monotonic() + wait_seconds
    while not (numbers := consumer.partitions(topic)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return numbers


def not_acknowledged(count: int, topic: str, cause: object) -> Unavailable:
    return Unavailable(f"the Kafka broker did not acknowledge {count} message(s) to {topic}: {cause}")


class KafkaPythonProducer:
    def __init__(self, client: Any) -> None:
        self.client = client

    def publish(self, topic: str, messages: Iterable[KeyValue], timeout: float = 30) -> int:
        from kafka.errors import KafkaError
        sent: list[Any] = []
        try:
            sent = [self.client.send(topic, key=key, value=value) for key, value in messages]
            self.client.flush(timeout=timeout)
            for future in sent:
                future.get(timeout=timeout)  # raises the broker's error for this message
        except KafkaError as error:
            raise not_acknowledged(len(sent), topic, f"{type(error).__name__}: {error}") from error
        return len(sent)

    def close(self, timeout: float = 5) -> None:
        self.client.close(timeout=timeout)


class KafkaPythonConsumer:
    def __init__(self, client: Any) -> None:
        self.client = client

    def partitions(self, topic: str) -> list[int]:
        return sorted(self.client.partitions_for_topic(topic) or [])

    def assign(self, topic: str, partitions: list[int], offsets: Mapping[int, int]) -> None:
        from kafka import TopicPartition
        assigned = [TopicPartition(topic, n) for n in partitions]
        self.client.assign(assigned)
        for partition in assigned:
            if partition.partition in offsets:
                self.client.seek(partition, offsets[partition.partition])
            else:
                self.client.seek_to_beginning(partition)

    def poll(self, timeout_ms: int) -> list[Any]:
        return [record for batch in self.client.poll(timeout_ms=timeout_ms).values() for record in batch]

    def commit(self, topic: str, offsets: Mapping[int, int]) -> None:
        from kafka import OffsetAndMetadata, TopicPartition
        self.client.commit_async({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in offsets.items()})

    def close(self) -> None:
        self.client.close()
