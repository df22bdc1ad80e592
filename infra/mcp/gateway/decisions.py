"""The gateway's decision log: every tools/call decision, allowed or denied, appended in batches to the
`gateway_decisions` table of the read model (migration 140) and, when Kafka is on, to `toolcat.decisions`
(key = subject, value = the row as JSON).

A call never waits for the log: `record` puts the decision in memory; a thread writes what gathered every
FLUSH_SECONDS (and at stop). Arguments and results are kept only with TOOLCAT_GATEWAY_RECORD_ARGUMENTS;
secret values never reach a decision (upstream credentials are resolved inside the upstream connection)."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import duckdb
import orjson
import pyarrow as pa

from infra.settings import Settings
from projections.rows import insert_columns

log = logging.getLogger("toolcat.gateway")

# A batch costs about the same whatever its size (an Arrow table, one INSERT on the writer's connection):
# at 0.2 s the writes were a sixth of the serving process's CPU under 8 calling sessions; once a second a
# decision is still in SQL before an analyst could have asked.
FLUSH_SECONDS = 1.0
COLUMNS = ("decided_at", "subject", "token", "session_id", "asked", "canonical_id", "server", "allowed", "reason",
           "matched_rule", "evidence", "set_position", "latency_ms", "upstream_error", "arguments", "result")
_JSON = ("evidence", "arguments", "result")
# Each column's Arrow type (the JSON ones as text, cast by DuckDB on insert), so a batch whose column holds
# only NULLs still has a type.
_ARROW = {column: pa.string() for column in COLUMNS} | {
    "decided_at": pa.timestamp("us", tz="UTC"), "allowed": pa.bool_(), "set_position": pa.int64(),
    "latency_ms": pa.float64()}


def decision(**fields: Any) -> dict[str, Any]:
    """A decision row: every column, missing ones None, `decided_at` now unless given."""
    row = {column: fields.get(column) for column in COLUMNS}
    row["decided_at"] = row["decided_at"] or datetime.now(timezone.utc)
    return row


class DecisionLog:
    """`write(rows)` stores a batch (a DuckDB cursor's insert); `publish(rows)`, when given, sends it to Kafka.
    A batch that cannot be stored is kept and tried again with the next (the log is never silently cut)."""

    def __init__(self, cursor: Callable[[], duckdb.DuckDBPyConnection] | None,
                 publish: Callable[[list[dict[str, Any]]], None] | None = None) -> None:
        self._cursor_of, self._publish = cursor, publish
        self._cursor: duckdb.DuckDBPyConnection | None = None
        self._pending: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.written = 0

    def record(self, row: dict[str, Any]) -> None:
        with self._lock:
            self._pending.append(row)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="toolcat-gateway-decisions", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.flush()
        if self._cursor is not None:
            self._cursor.close()

    def _run(self) -> None:
        while not self._stop.wait(FLUSH_SECONDS):
            self.flush()

    def flush(self) -> int:
        """Write what gathered; how many rows."""
        with self._lock:
            rows, self._pending = self._pending, []
        if not rows:
            return 0
        try:
            self._write(rows)
        except duckdb.Error as error:  # kept for the next flush, in order
            log.warning("writing %d gateway decisions failed (kept for the next try): %s", len(rows), error)
            with self._lock:
                self._pending = rows + self._pending
            return 0
        if self._publish is not None:
            try:
                self._publish(rows)
            except Exception as error:  # noqa: BLE001 - the table holds them; Kafka is the copy
                log.warning("publishing %d gateway decisions to Kafka failed: %s", len(rows), error)
        self.written += len(rows)
        return len(rows)

    def _write(self, rows: list[dict[str, Any]]) -> None:
        if self._cursor_of is None:
            return
        if self._cursor is None:
            self._cursor = self._cursor_of()
        # One Arrow table per batch: DuckDB's executemany runs the statement once per row (a third of the
        # serving process's CPU under load was this thread's), an Arrow insert once per batch.
        columns = {column: [_stored(column, row[column]) for row in rows] for column in COLUMNS}
        table = pa.table({column: pa.array(values, type=_ARROW[column]) for column, values in columns.items()})
        insert_columns(self._cursor, "gateway_decisions", table)


def _stored(column: str, value: Any) -> Any:
    if column in _JSON and value is not None:
        return orjson.dumps(value, default=str).decode()
    return value


def as_message(row: dict[str, Any]) -> tuple[bytes, bytes]:
    """A decision as a Kafka message: key = subject, value = the row as JSON."""
    return row["subject"].encode(), orjson.dumps(row, default=str)


def kafka_publisher(settings: Settings) -> Any:
    """Decisions to Kafka `toolcat.decisions` when Kafka is on (the producer made at the first batch); None
    otherwise."""
    if not settings.kafka_bootstrap:
        return None
    holder: dict[str, Any] = {}

    def publish(rows: list[dict[str, Any]]) -> None:
        if "producer" not in holder:
            from infra import kafka_clients
            holder["producer"] = kafka_clients.producer(settings)
        holder["producer"].publish(settings.kafka_decisions_topic, [as_message(row) for row in rows])
    return publish
