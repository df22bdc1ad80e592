"""The catch-up's fast read of a SQLite event store: rows read with sqlite3 and decoded with orjson,
bypassing the eventsourcing mapper (its json decoder, object hooks and UUID objects cost about three
quarters of the read). The records are exactly those `Catalog.history` gives: any row orjson might read
differently from the store's own decoder is decoded by that decoder instead (see `_decode`).

The one place that decodes eventsourcing's stored format rather than going through its API: the SQLite
recorder's table and columns (`read_rows`), its JSON transcoder's datetime form (`_decode`) and the hex form
of originator ids (`_uuid_text`); domain/history.py's `plain_sqlite_store` finds the file and table (there,
as domain/ is the only layer below this one that may import eventsourcing). eventsourcing is pinned in
pyproject.toml for it, and tests/integration/test_stored_rows.py fails when the installed version is not the
one checked.
"""
from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import orjson

from domain.errors import IntegrityFailure
from domain.history import HistoryRecord

Decode = Callable[[bytes], dict[str, Any]]

# orjson reads an integer beyond 64 bits as a float where json keeps it exact: any run of 19 digits sends
# the row to the store's decoder (one inside a string only costs that). Digits mapped to "0" and all else
# to ".", then a substring search: a third of a regex's cost.
_DIGITS_ONLY = bytes(48 if 48 <= byte <= 57 else 46 for byte in range(256))
_LONG_RUN = b"0" * 19
_TYPED = b'"_type_"'


def read_rows(path: str, table: str, after: int, limit: int, decode: Decode) -> list[HistoryRecord]:
    """Up to `limit` stored events after position `after`, in order; `decode` is the store's decoder."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute(f"SELECT rowid, originator_id, originator_version, topic, state FROM {table} "
                           "WHERE rowid > ? ORDER BY rowid LIMIT ?", (after, limit)).fetchall()
    finally:
        con.close()
    records = []
    for position, originator, version, topic, state in rows:
        try:
            decoded, finite = _decode(state, decode)
        except Exception as error:  # any decoding failure means the stored bytes were altered
            raise IntegrityFailure(f"the stored event at position {position} no longer decodes: {error}",
                                   position=position) from error
        records.append(HistoryRecord(position, _uuid_text(originator), version, topic, decoded, finite))
    return records


def _decode(state: bytes, decode: Decode) -> tuple[dict[str, Any], bool]:
    """The stored state and whether it holds only finite numbers (HistoryRecord.finite).

    orjson where it reads what json reads: the only transcoded value is the timestamp (one `_type_`),
    and no integer could exceed 64 bits. NaN, ±Infinity, a number too large for a float and lone
    surrogates make orjson refuse, so what it read is finite with no byte search; the store's decoder
    reads all of them, so its values are finite only when the bytes hold no NaN or Infinity."""
    if state.count(_TYPED) != 1 or _LONG_RUN in state.translate(_DIGITS_ONLY):
        return _decoded(state, decode)
    try:
        value = orjson.loads(state)
    except orjson.JSONDecodeError:
        return _decoded(state, decode)
    stamp = value.get("timestamp") if type(value) is dict else None
    if type(stamp) is not dict or stamp.get("_type_") != "datetime_iso" or len(stamp) != 2:
        return _decoded(state, decode)
    value["timestamp"] = datetime.fromisoformat(stamp["_data_"])
    return value, True


def _decoded(state: bytes, decode: Decode) -> tuple[dict[str, Any], bool]:
    return decode(state), b"NaN" not in state and b"Infinity" not in state


def _uuid_text(hex_id: str) -> str:
    """`str(UUID(hex_id))` without building the UUID: the store writes `uuid.hex` (32 lowercase digits)."""
    if len(hex_id) == 32 and hex_id.islower():
        return f"{hex_id[:8]}-{hex_id[8:12]}-{hex_id[12:16]}-{hex_id[16:20]}-{hex_id[20:]}"
    return str(uuid.UUID(hex_id))
