"""The published form of one event (DESIGN.md section 4) and its hash chain.

The same code builds envelopes for the catch-up projector, the Kafka relay and the auditor, so the
hashes agree everywhere. The hash covers the event as stored (its original class version), so an
upcaster added later never changes a hash already recorded.
"""
from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from domain.catalog import HistoryRecord

SCHEMA = "toolcat.event/v1"
GENESIS_HASH = "0" * 64
_META_KEYS = ("timestamp", "originator_topic", "actor", "reason", "idempotency_key", "class_version")


class Envelope(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    schema_: Literal["toolcat.event/v1"] = Field(SCHEMA, alias="schema")
    position: int = Field(ge=1)
    prev_position: int = Field(ge=0)
    originator_id: str
    originator_version: int = Field(ge=1)
    type: str
    type_version: int = Field(1, ge=1)
    recorded_at: str
    actor: str
    reason: str | None
    idempotency_key: str | None = None
    data: dict[str, Any]
    prev_hash: str
    hash: str

    def body(self) -> dict[str, Any]:
        """The fields the hash covers: every field but the two hashes."""
        return self.model_dump(by_alias=True, exclude={"hash", "prev_hash"})

    def to_json(self) -> bytes:
        return canonical_json(self.model_dump(by_alias=True))

    def expected_hash(self) -> str:
        return chain_hash(self.prev_hash, self.body())


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def chain_hash(prev_hash: str, body: dict[str, Any]) -> str:
    return hashlib.sha256(prev_hash.encode() + b"\n" + canonical_json(body)).hexdigest()


def format_time(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds")


def seal(record: HistoryRecord, prev_position: int, prev_hash: str) -> Envelope:
    """The envelope of a stored event, chained to the one before it."""
    state = record.state
    body = {
        "schema": SCHEMA,
        "position": record.position,
        "prev_position": prev_position,
        "originator_id": record.originator_id,
        "originator_version": record.originator_version,
        "type": record.topic,
        "type_version": state.get("class_version", 1),
        "recorded_at": format_time(state["timestamp"]),
        "actor": state.get("actor", ""),
        "reason": state.get("reason"),
        "idempotency_key": state.get("idempotency_key"),
        "data": {k: v for k, v in state.items() if k not in _META_KEYS},
    }
    # Built from the store by this code: the fields are known good, so skip re-validating them.
    fields = {k: v for k, v in body.items() if k != "schema"}
    return Envelope.model_construct(schema_=SCHEMA, **fields, prev_hash=prev_hash, hash=chain_hash(prev_hash, body))


def seal_all(records: list[HistoryRecord], prev_position: int, prev_hash: str) -> list[Envelope]:
    envelopes = []
    for record in records:
        envelope = seal(record, prev_position, prev_hash)
        envelopes.append(envelope)
        prev_position, prev_hash = envelope.position, envelope.hash
    return envelopes
