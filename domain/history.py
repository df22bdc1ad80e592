"""The stored history as the store holds it: the feed the relay, the projector and the auditor read."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eventsourcing.persistence import ApplicationRecorder, Transcoder

from domain.errors import IntegrityFailure


@dataclass(frozen=True, slots=True)
class HistoryRecord:
    """One stored event as the store holds it (its original class version, not upcast)."""

    position: int
    originator_id: str
    originator_version: int
    topic: str
    state: dict[str, Any]
    # Whether the stored bytes hold no NaN or Infinity (json writes them bare, so a byte check sees them):
    # the hash chain's fast canonical JSON relies on it (projections/canonical.py).
    finite: bool = False


def read_history(recorder: ApplicationRecorder, transcoder: Transcoder, after: int, limit: int,
                 topics: tuple[str, ...] = ()) -> list[HistoryRecord]:
    """Stored events after a position, in order; an event that no longer decodes is an integrity failure."""
    records = []
    for n in recorder.select_notifications(start=after + 1, limit=limit, topics=topics):
        try:
            state = transcoder.decode(n.state)
        except Exception as error:  # any decoding failure means the stored bytes were altered
            raise IntegrityFailure(f"the stored event at position {n.id} no longer decodes: {error}",
                                   position=n.id) from error
        finite = b"NaN" not in n.state and b"Infinity" not in n.state
        records.append(HistoryRecord(n.id, str(n.originator_id), n.originator_version, n.topic, state, finite))
    return records


def plain_sqlite_store(recorder: ApplicationRecorder, transcoder: Transcoder, cipher: Any,
                       compressor: Any) -> tuple[str, str] | None:
    """The SQLite file and events table of a store whose rows a reader may decode itself (the catch-up's
    fast path): plain JSON state (no cipher, no compression) and UUID originator IDs, in a file another
    connection can open. None for any other store, which is read through `read_history`. It looks inside the
    library's SQLite recorder (its file and table): eventsourcing is pinned for it (projections/stored_rows.py)."""
    from eventsourcing.persistence import JSONTranscoder
    from eventsourcing.sqlite import SQLiteApplicationRecorder
    if not isinstance(recorder, SQLiteApplicationRecorder) or cipher is not None or compressor is not None:
        return None
    if type(transcoder) is not JSONTranscoder or recorder.datastore.originator_id_type != "uuid":
        return None
    path = recorder.datastore.pool.db_name
    if ":memory:" in path or path.startswith("file:") or "mode=memory" in path:
        return None
    return path, recorder.events_table_name
