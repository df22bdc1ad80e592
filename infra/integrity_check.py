"""One chain check for `toolcat serve`'s integrity watch (infra/http/integrity.py), run in a worker process.

It is `audit verify` against what vouches for the history while a server owns the read model: the hashes
the published snapshot (`snapshot.duckdb`, the server's read model as of its last publication) recorded,
every seal in the store, and the hash the live read model recorded at its head (taken as a head kept
outside the store, so an event altered after the snapshot was published is caught too, though without its
position until the next snapshot holds it). Kept free of the web server's imports: a spawned worker imports
only this and what the check needs.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any


def check_history(settings_json: str, snapshot: str | None, live_head: str | None) -> dict[str, Any]:
    """`verify`'s answer, or {"verdict": "altered", "position", "message"} for the first disagreement."""
    import duckdb

    from domain.errors import IntegrityFailure
    from infra.settings import Settings
    from infra.wiring import open_catalog
    from projections.verify import verify

    settings = Settings.model_validate_json(settings_json)
    catalog = open_catalog(settings)
    con = duckdb.connect(snapshot, read_only=True) if snapshot and Path(snapshot).exists() else None
    try:
        # PostgreSQL sequences may skip numbers when a write is rolled back; SQLite positions never do.
        return verify(catalog, con, contiguous=not settings.event_store_url, expect_head=live_head)
    except IntegrityFailure as failure:
        position = failure.details.get("position")
        located = "expected_head" not in failure.details  # the kept head's failure ends at the chain's end
        return {"ok": False, "verdict": "altered", "position": position if located else None,
                "message": failure.message}
    finally:
        if con is not None:
            con.close()
        catalog.close()
