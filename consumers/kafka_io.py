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


class Sent(Protocol):
    def wait(self, timeout: float = 30, last: bool = True) -> int:
        """Wait for the broker; returns the count once every one is acknowledged, else raises Unavailable.
        `last`: nothing was sent after these, so what the client holds back to fill a batch goes now."""


class Producer(Protocol):
    client: Any  # the library's own producer (the bench measures it alone)

    def publish(self, topic: str, messages: Iterable[KeyValue], timeout: float = 30) -> int:
        """Send every message, wait for the broker; returns the count once every one is acknowledged."""

    def send(self, topic: str, messages: Iterable[KeyValue]) -> Sent:
        """Send every message without waiting: the relay prepares its next page meanwhile. Messages sent
        later are acknowledged after these (the producers keep order), and waiting for these does not
        wait for them."""

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
        return self.send(topic, messages).wait(timeout)

    def send(self, topic: str, messages: Iterable[KeyValue]) -> Sent:
        from kafka.errors import KafkaError
        send = self.client.send
        futures: list[Any] = []
        try:
            # A topic of one partition (toolcat's events topic: one total order) takes every key there:
            # naming it skips the default partitioner's murmur2 of each key, in pure Python about a
            # fifth of `send`. With more partitions the library's partitioner decides, as before.
            partitions = self.client.partitions_for(topic)
            only = next(iter(partitions)) if partitions is not None and len(partitions) == 1 else None
            futures = [send(topic, value, key, None, only) for key, value in messages]
        except KafkaError as error:
            raise not_acknowledged(len(futures), topic, f"{type(error).__name__}: {error}") from error
        return _KafkaPythonSent(self.client, topic, futures)

    def close(self, timeout: float = 5) -> None:
        self.client.close(timeout=timeout)


class _KafkaPythonSent:
    def __init__(self, client: Any, topic: str, futures: list[Any]) -> None:
        self.client, self.topic, self.futures = client, topic, futures

    def wait(self, timeout: float = 30, last: bool = True) -> int:
        from kafka.errors import KafkaError
        try:
            # Nothing sent after these: send what lingers now. Otherwise a flush would wait for the later
            # messages too, and these go out anyway when their batch fills or lingered (linger_ms).
            if last and self.futures and not self.futures[-1].is_done:
                self.client.flush(timeout=timeout)
            for future in self.futures:
                future.get(timeout=timeout)  # raises the broker's error for this message
        except KafkaError as error:
            raise not_acknowledged(len(self.futures), self.topic, f"{type(error).__name__}: {error}") from error
        return len(self.futures)


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
