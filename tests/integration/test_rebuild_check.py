"""A rebuild's check of the history it replayed against the hashes the old read model recorded
(verify.rebuild_disagreements): which edits of an event count as altered, on two real read models."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import duckdb

from domain.base import Meta
from domain.naming import preset
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from projections.catchup import catch_up
from projections.projector import Projector
from projections.verify import rebuild_disagreements

META = Meta(actor="tester")


def built_read_model(home: Path) -> Path:
    """A read model of a few events: the policy, a connector, a unit, an agent and a grant."""
    settings = Settings(home=home)
    catalog = open_catalog(settings)
    catalog.init(preset("spring-voyage"), META)
    catalog.register_connector("arxiv", None, ["arxiv.search", "arxiv.fetch"], META)
    catalog.create_unit("org", None, META)
    catalog.create_agent("ada", "org", "stateful", META)
    catalog.add_grant("agent:ada", "arxiv.search", META)
    con = open_read_model(settings)
    catch_up(catalog, Projector(con))
    con.close()
    catalog.close()
    return settings.read_model_path


def hashes(con: duckdb.DuckDBPyConnection) -> dict[int, str]:
    return dict(con.execute("SELECT position, hash FROM events").fetchall())


def test_altered_events_are_named_by_position_with_both_hashes(tmp_path: Path) -> None:
    # given the read model recorded when the history was projected, and a rebuild of it
    old_path = built_read_model(tmp_path / "home")
    fresh_path = tmp_path / "fresh.duckdb"
    shutil.copy(old_path, fresh_path)
    fresh, old = duckdb.connect(str(fresh_path)), duckdb.connect(str(old_path), read_only=True)
    try:
        recorded = hashes(old)
        last = max(recorded)
        assert last >= 8
        assert rebuild_disagreements(fresh, old) == {"altered": [], "seals": []}

        # when the rebuild differs: a body changed under the same hashes (2), a hash changed on the same
        # link (4), a link changed with its hash but not the body (6: what follows an altered event), and
        # the last event gone
        fresh.execute("UPDATE events SET actor = 'intruder' WHERE position = 2").fetchall()
        fresh.execute("UPDATE events SET hash = repeat('a', 64) WHERE position = 4").fetchall()
        fresh.execute("UPDATE events SET prev_hash = repeat('b', 64), hash = repeat('c', 64) "
                      "WHERE position = 6").fetchall()
        fresh.execute("DELETE FROM events WHERE position = ?", [last]).fetchall()

        # then the body, the hash and the vanished event are altered, in order; the new link alone is not
        found: dict[str, Any] = rebuild_disagreements(fresh, old)
        assert found["altered"] == [
            {"position": 2, "old_hash": recorded[2], "new_hash": recorded[2]},
            {"position": 4, "old_hash": recorded[4], "new_hash": "a" * 64},
            {"position": last, "old_hash": recorded[last], "new_hash": None},
        ]
        # and a replay that stopped before the last event compares only what it reached
        assert [a["position"] for a in rebuild_disagreements(fresh, old, upto=last - 1)["altered"]] == [2, 4]
    finally:
        fresh.close()
        old.close()
