"""The Kafka interface of `consumers/kafka_io.py` on confluent-kafka (librdkafka), the `fast-kafka` extra."""
from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from consumers.kafka_io import KeyValue, Record, Sent, not_acknowledged
from domain.errors import Unavailable


class ConfluentProducer:
    def __init__(self, client: Any) -> None:
        self.client = client

    def publish(self, topic: str, messages: Iterable[KeyValue], timeout: float = 30) -> int:
        return self.send(topic, messages).wait(timeout)

    def send(self, topic: str, messages: Iterable[KeyValue]) -> Sent:
        sent = _ConfluentSent(self.client, topic)
        produce, delivered = self.client.produce, sent.delivered
        for key, value in messages:
            try:
                produce(topic, value, key, on_delivery=delivered)
            except BufferError:  # the local queue is full: serve acknowledgements until it has room
                self._produce_when_room(topic, key, value, delivered)
            sent.count += 1
        return sent

    def _produce_when_room(self, topic: str, key: bytes | None, value: bytes, delivered: Any) -> None:
        while True:
            self.client.poll(0.05)
            try:
                self.client.produce(topic, value, key, on_delivery=delivered)
                return
            except BufferError:
                continue

    def close(self, timeout: float = 5) -> None:
        # A producer being dropped after a failure holds messages the broker never took: forget them
        # (the relay publishes them again from its saved position) instead of waiting for them.
        self.client.purge()
        self.client.flush(timeout)  # serves the purged messages' callbacks
        self.client.close()


class _ConfluentSent:
    """Counts the delivery reports of the messages of one `send` (served by the client's poll/flush)."""

    def __init__(self, client: Any, topic: str) -> None:
        self.client, self.topic = client, topic
        self.count, self.acknowledged = 0, 0
        self.failures: list[Any] = []

    def delivered(self, error: Any, _message: Any) -> None:
        if error is None:
            self.acknowledged += 1
        else:
            self.failures.append(error)

    def wait(self, timeout: float = 30, last: bool = True) -> int:
        deadline = time.monotonic() + timeout
        while self.acknowledged + len(self.failures) < self.count and (left := deadline - time.monotonic()) > 0:
            if last:  # flush also sends what lingers, and waits for every message (later ones too)
                self.client.flush(left)
            else:
                self.client.poll(min(left, 0.05))
        unsent = self.count - self.acknowledged - len(self.failures)
        if self.failures or unsent:
            cause = self.failures[0] if self.failures else f"{unsent} still queued after {timeout:.0f}s"
            raise not_acknowledged(len(self.failures) + unsent, self.topic, cause)
        return self.count


class ConfluentConsumer:
    def __init__(self, client: Any, max_records: int) -> None:
        self.client, self.max_records = client, max_records

    def partitions(self, topic: str) -> list[int]:
        from confluent_kafka import KafkaException
        try:
            described = self.client.list_topics(topic, timeout=10).topics.get(topic)
        except KafkaException as error:
            raise Unavailable(f"no Kafka broker answered for topic {topic}: {error}") from error
        return sorted(described.partitions) if described is not None and described.error is None else []

    def assign(self, topic: str, partitions: list[int], offsets: Mapping[int, int]) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition
        self.client.assign([TopicPartition(topic, n, offsets.get(n, OFFSET_BEGINNING)) for n in partitions])

    def poll(self, timeout_ms: int) -> list[Record]:
        # As kafka-python's poll: wait only for the first message, then take what is already fetched
        # (librdkafka's consume(n, timeout) would wait out the timeout for n messages: latency).
        first = self.client.poll(timeout_ms / 1000)
        if first is None:
            return []
        records = []
        for message in [first, *self.client.consume(self.max_records - 1, 0)]:
            error = message.error()
            if error is None:
                records.append(Record(message.topic(), message.partition(), message.offset(), message.key(),
                                      message.value()))
            elif error.fatal():
                raise Unavailable(f"the Kafka consumer failed: {error}")
            # other errors are events (a broker went away, a topic is not there yet) librdkafka retries
        return records

    def commit(self, topic: str, offsets: Mapping[int, int]) -> None:
        from confluent_kafka import TopicPartition
        self.client.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=True)

    def close(self) -> None:
        self.client.close()
