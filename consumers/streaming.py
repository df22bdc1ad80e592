"""The streaming projector: Kafka `toolcat.events` → the same projector the store path uses.

Offsets are stored in the read model in the same DuckDB transaction as the rows (and committed to the
group afterwards, for lag monitoring), so a restart resumes exactly where the read model is.
"""
from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import duckdb
from consumers.kafka_io import Consumer, Producer, partitions_of
from domain.errors import IntegrityFailure
from projections.envelope import Envelope
from projections.envelope_json import BadEnvelope, parse_envelope
from projections.catchup import PAGE_SIZE
from projections.projector import Projector
from projections.tracking import Tracking
from projections.rows import insert_columns, run


class CorruptMessage(IntegrityFailure):
    code = "corrupt_message"


def stored_offsets(con: duckdb.DuckDBPyConnection, topic: str) -> dict[int, int]:
    return dict(run(con, "SELECT partition, next_offset FROM kafka_offsets WHERE topic = $t", {"t": topic}))


def _save_offsets(topic: str, offsets: dict[int, int]) -> Callable[[duckdb.DuckDBPyConnection], None]:
    def save(con: duckdb.DuckDBPyConnection) -> None:
        run(con, "DELETE FROM kafka_offsets WHERE topic = $t AND partition IN (SELECT unnest($p::INTEGER[]))",
            {"t": topic, "p": list(offsets)})
        columns = {"topic": [topic] * len(offsets), "partition": list(offsets), "next_offset": list(offsets.values())}
        insert_columns(con, "kafka_offsets", columns, _OFFSETS)
    return save


_OFFSETS = {"topic": "VARCHAR", "partition": "INTEGER", "next_offset": "BIGINT"}


# A batch gathers the polls already fetched, up to a store catch-up's page: a batch's fixed cost (its
# transaction, its Arrow inserts, its dirty-subject queries) is then spread as widely as there. A poll
# holds only what one fetch brought (often ~2,000 envelopes), far less.
BATCH_EVENTS = PAGE_SIZE
# Past a full poll, wait this long for one more fetch: long enough for the prefetch that follows a
# poll to land while the topic is behind, short enough that a follower's batch ends quickly.
MORE_WAIT_MS = 10
# ...and go on only while polls come this full: a topic far behind gives whole fetches (about 1,600
# envelopes a megabyte), a follower a handful, whose batch must not wait for more (latency): a first
# poll below this ends its batch at once.
GATHER_WHILE = 500
# ...and stop gathering this long after the first poll (settings.follow_batch_seconds, this default): a
# burst's first events are applied within about this long plus one batch, not after a whole page was
# gathered. A topic far behind still gets large batches: what is polled while one is applied waits
# for the next (consumers/prefetch.py merges it).
BATCH_SECONDS = 0.02


class StreamProjector:
    def __init__(self, consumer: Consumer, topic: str, dead_letters: Callable[[Any, str], None],
                 batch_events: int = BATCH_EVENTS, batch_seconds: float = BATCH_SECONDS) -> None:
        self.consumer, self.topic, self.dead_letters = consumer, topic, dead_letters
        self.batch_events, self.batch_seconds = batch_events, batch_seconds
        self.partitions: list[int] = []
        self._held: list[Any] = []  # fetched beyond the last batch's size
        self._behind = False  # the last poll's gathering stopped at a bound while polls still came full
        # How applied offsets reach the group: at once, or through the thread that polls (prefetch.py)
        self.commit_offsets: Callable[[dict[int, int]], None] = self.commit

    def assign(self, con: duckdb.DuckDBPyConnection, wait_seconds: float = 10.0) -> None:
        """Read every partition of the topic from where this read model stopped."""
        self.partitions = partitions_of(self.consumer, self.topic, wait_seconds)
        if not self.partitions:
            raise IntegrityFailure(f"topic {self.topic} does not exist or has no partitions")
        self.consumer.assign(self.topic, self.partitions, stored_offsets(con, self.topic))

    def poll(self, timeout_ms: int = 500) -> list[Any]:
        """The messages of one batch: wait up to `timeout_ms` for the first, then take what the client
        fetches next while polls come full, until `batch_events` or `batch_seconds` after the first,
        whichever comes first; what was fetched beyond the size starts the next batch."""
        messages, self._held = self._held or self.consumer.poll(timeout_ms), []
        until, last = time.monotonic() + self.batch_seconds, len(messages)
        # A follower's poll brings a handful: its batch goes at once, without a wait for more (latency).
        while last >= GATHER_WHILE and len(messages) < self.batch_events and time.monotonic() < until:
            more = self.consumer.poll(MORE_WAIT_MS)
            messages.extend(more)
            last = len(more)
        self._held = messages[self.batch_events:]  # the next batch's first messages
        self._behind = last >= GATHER_WHILE or bool(self._held)
        return messages[:self.batch_events]

    def is_full(self, messages: list[Any]) -> bool:
        """Whether the batch just polled was cut at a bound (its size, or its time while polls still came
        full), so the topic is behind (its sets can wait: see apply)."""
        return len(messages) >= self.batch_events or self._behind

    def apply(self, projector: Projector, messages: list[Any], settle: bool = True) -> Tracking:
        """Parse and verify (each envelope's own hash), order by position, apply in one transaction with
        the offsets, then commit them. The first bad message stops the batch: what came before it is
        applied, it goes to the dead-letter topic with the reason, and CorruptMessage is raised.
        Without `settle` the effective sets wait (marked dirty) for a later batch or `Projector.settle`,
        as in a store catch-up: a topic far behind refreshes them once it is caught up, not per batch."""
        return self.apply_parsed(projector, self.parse(messages), settle)

    def parse(self, messages: list[Any]) -> Parsed:
        """The envelopes of a batch up to its first bad message, in position order, with their offsets.
        Touches neither the consumer nor the read model: a prefetching thread may run it."""
        envelopes, corrupt = [], None
        for message in messages:
            try:
                envelopes.append(parse_envelope(message.value))
            except BadEnvelope as error:
                corrupt = (message, str(error))
                break
        offsets: dict[int, int] = {}
        for message in messages[:len(envelopes)]:
            offsets[message.partition] = max(offsets.get(message.partition, 0), message.offset + 1)
        envelopes.sort(key=lambda e: e.position)
        return Parsed(envelopes, offsets, corrupt, self.is_full(messages))

    def apply_parsed(self, projector: Projector, parsed: Parsed, settle: bool = True) -> Tracking:
        """`apply` of a batch already parsed (see there)."""
        envelopes, offsets, corrupt = parsed.envelopes, parsed.offsets, parsed.corrupt
        # parse_envelope verified each one's hash: the projector checks only the links of the chain
        tracking = projector.apply(envelopes, also=_save_offsets(self.topic, offsets), chained_here=True,
                                   settle=settle) if envelopes else projector.tracking()
        if offsets:
            self.commit_offsets(offsets)
        if corrupt:
            projector.settle()  # the sets of what was applied, before stopping
            message, reason = corrupt
            self.dead_letters(message, reason)
            raise CorruptMessage(f"message at {message.topic}[{message.partition}] offset {message.offset} "
                                 f"{reason}; sent to the dead-letter topic; stopped after position "
                                 f"{tracking.position}", partition=message.partition, offset=message.offset,
                                 position=tracking.position)
        return tracking

    def commit(self, offsets: dict[int, int]) -> None:
        """The group's offsets, for lag monitoring (the read model holds the ones that count)."""
        try:
            self.consumer.commit(self.topic, offsets)
        except Exception:  # noqa: BLE001 - the read model holds the offsets; the group's copy is for lag only
            pass


class Parsed(NamedTuple):
    envelopes: list[Envelope]  # in position order, each one's hash verified
    offsets: dict[int, int]    # partition → next offset, of the messages parsed
    corrupt: tuple[Any, str] | None  # the first bad message and why; the batch stops before it
    full: bool                 # cut at its size: the topic is behind


def dead_letter_value(message: Any, reason: str) -> bytes:
    raw = message.value if isinstance(message.value, bytes) else str(message.value).encode()
    return json.dumps({"reason": reason, "topic": message.topic, "partition": message.partition,
                       "offset": message.offset, "value_base64": base64.b64encode(raw).decode()}).encode()


def dead_letter_to(producer: Producer, topic: str) -> Callable[[Any, str], None]:
    """Sends a bad message, with the reason, to the dead-letter topic and waits for the broker."""
    def send(message: Any, reason: str) -> None:
        producer.publish(topic, [(message.key, dead_letter_value(message, reason))], timeout=10)
    return send
