"""Seed rule 23 (images run by units) through history: a unit's image tools, live, as of every position,
in effective_history and in a read model built in one page or event by event, are the same rows — the
checks tests/integration/test_effective_history.py makes of agents' images, on a story of units' images.

Real SQLite file store and DuckDB read model.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from domain.base import Meta
from domain.naming import preset
from domain.values import ToolSpec
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from projections.catchup import catch_up
from projections.effective.reads import effective_rows, subjects_at
from projections.projector import Projector
from projections.rows import select_rows

META = Meta(actor="tester", reason="unit images")
FIELDS = ("subject_kind", "subject", "tool_key", "tool_id", "namespace", "description", "provenance",
          "inherited_from", "exposure")


def whole_set(con: Any) -> list[dict[str, Any]]:
    return select_rows(con, "SELECT * FROM effective_tools ORDER BY subject_kind, subject, tool_id")


def history_at(con: Any, position: int) -> list[dict[str, Any]]:
    return select_rows(con, f"SELECT {', '.join(FIELDS)} FROM effective_history WHERE valid_from <= ? AND "
                            "(valid_to IS NULL OR valid_to > ?) ORDER BY subject_kind, subject, tool_id",
                       [position, position])


def test_given_units_running_and_rotating_images_the_live_as_of_and_history_answers_agree(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, event_store_url=None)
    catalog, con = open_catalog(settings), open_read_model(settings)
    spec = ToolSpec(source="builtin", group="core", tier="default", visibility="public")
    steps = [lambda: catalog.init(preset("spring-voyage"), META),
             lambda: catalog.register_tool("sv.runtime.echo", spec, META),
             lambda: catalog.create_unit("org", None, META),
             lambda: catalog.create_unit("eng", "org", META),
             lambda: catalog.create_agent("scout", "eng", "stateful", META),
             lambda: catalog.declare_image("unit:eng", "acme/librarian:1", ["acme.cite", "acme.find"], META),
             lambda: catalog.declare_image("scout", "acme/scout:1", ["acme.cite"], META),
             lambda: catalog.add_grant("unit:org", "acme.*", META),
             lambda: catalog.declare_image("unit:eng", "acme/librarian:2", ["acme.find", "sv.runtime.echo"], META),
             lambda: catalog.revoke_grant("unit:org", "acme.*", META),
             lambda: catalog.declare_image("unit:org", "acme/librarian:2", ["acme.cite"], META)]
    live: dict[int, list[dict[str, Any]]] = {}
    try:
        for step in steps:
            step()
            position = catch_up(catalog, Projector(con)).position
            live[position] = whole_set(con)
        subjects = subjects_at(con, max(live))
        for position, rows in live.items():
            assert effective_rows(con, subjects, at=position) == rows, position
            assert history_at(con, position) == [{k: r[k] for k in FIELDS} for r in rows], position
        eng = {r["tool_id"]: r["provenance"] for r in live[max(live)] if r["subject"] == "eng"}
        assert eng == {"acme.find": "image", "sv.runtime.echo": "platform"}  # platform outranks image
        for page_size in (1, 100_000):
            rebuilt = open_read_model(settings, path=tmp_path / f"paged-{page_size}.duckdb")
            try:
                catch_up(catalog, Projector(rebuilt), page_size=page_size)
                assert whole_set(rebuilt) == live[max(live)]
            finally:
                rebuilt.close()
    finally:
        con.close()
