"""End to end: `toolcat export --format parquet DIR` on the bundled example story. Every table and view
comes back from its Parquet file with pyarrow; `schema.sql` and the files, loaded into a fresh DuckDB,
answer the analysts' history questions (docs/analysts.md) as the read model does and hold the same
fingerprint. With a server owning the read model, the export reads its snapshot and never the file the
server holds.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing, nullcontext
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from domain.base import Meta
from infra.exports import relations
from infra.http import snapshot
from infra.settings import Settings
from infra.wiring import open_catalog
from projections.fingerprint import fingerprint
from projections.tracking import read_tracking
from projections.rows import scalar
from tests.doc_text import history_questions
from tests.support import (error_of, ok, run_example, run_in_process, run_toolcat, toolcat_env,
                           toolcat_environ, toolcat_in_process)


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home holding the example story, projected; the tests only read it."""
    home = tmp_path_factory.mktemp("export") / "home"
    run_example(home)
    run_in_process(home, [["project"]])
    return home


@pytest.fixture
def live(story: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    with closing(duckdb.connect(str(story / "catalog.duckdb"), read_only=True)) as con:
        yield con


def export(home: Path, target: Path, **env: str) -> Any:
    return run_toolcat("export", "--format", "parquet", str(target),
                       env=toolcat_env("exporter", {"TOOLCAT_HOME": str(home)}, env), timeout=120)


def answers(con: duckdb.DuckDBPyConnection) -> list[list[dict[str, Any]]]:
    return [con.sql(question).to_arrow_table().to_pylist() for question in history_questions()]


def test_every_table_and_view_comes_back_from_its_parquet_file(story: Path, tmp_path: Path) -> None:
    target = tmp_path / "out"
    document = ok(export(story, target))
    with closing(duckdb.connect(str(story / "catalog.duckdb"), read_only=True)) as live:
        tables, views = relations(live)
        counts = {name: scalar(live, f"SELECT count(*) FROM {name}") for name in tables + views}
        head = read_tracking(live).position

    assert document["position"] == head and document["source"] == "read model"
    assert (document["directory"], document["format"]) == (str(target), "parquet")
    assert len(tables) > 20 and {"events", "tools", "grant_history", "effective_tools"} <= set(tables)
    assert set(views) == {"units", "agents", "connectors", "bindings", "grants", "image_tools", "unit_image_tools",
                          "tool_classes", "route_rules", "nodes", "secret_refs", "effective_history", "mcp_servers",
                          "mcp_tools", "secret_aliases"}
    assert document["tables"] == {t: counts[t] for t in tables}
    assert document["views"] == {v: counts[v] for v in views}
    assert sorted(p.name for p in target.iterdir()) == sorted(
        [f"{name}.parquet" for name in tables + views] + ["load.sql", "schema.sql"])
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name]

    for name in tables + views:
        assert pq.read_table(target / f"{name}.parquet").num_rows == counts[name], name
    assert counts["events"] == head > 100
    # JSON as text, so that readers without Parquet's JSON annotation see strings, not bytes
    events = pq.read_table(target / "events.parquet")
    assert events.schema.field("data").type == pa.string()
    assert events.column("data")[0].as_py().startswith('{"policy"')


def test_schema_sql_and_the_files_answer_the_documented_history_questions_as_the_read_model_does(
        story: Path, tmp_path: Path, live: duckdb.DuckDBPyConnection) -> None:
    target = tmp_path / "out"
    document = ok(export(story, target))
    assert len(history_questions()) == 11

    # the way of any DuckDB: schema.sql, then each table from its file
    with closing(duckdb.connect()) as fresh:
        fresh.execute((target / "schema.sql").read_text())
        for table in document["tables"]:
            fresh.execute(f"COPY {table} FROM '{target / table}.parquet' (FORMAT parquet)")
        assert answers(fresh) == answers(live)
        assert all(answers(live)), "every question has an answer on the example story"
        for view in document["views"]:  # the views schema.sql creates hold what their files hold
            rows = fresh.sql(f"SELECT * FROM {view}").to_arrow_table()
            assert rows.to_pylist() == pq.read_table(target / f"{view}.parquet").to_pylist(), view

    # DuckDB's own import (schema.sql then load.sql) gives back the whole read model, bit for bit
    with closing(duckdb.connect()) as imported:
        imported.execute(f"IMPORT DATABASE '{target}'")
        assert fingerprint(imported) == fingerprint(live)


def test_export_refuses_a_directory_holding_other_files(story: Path, tmp_path: Path) -> None:
    target = tmp_path / "busy"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    refused = export(story, target)
    assert refused.code == 2, refused.stderr
    assert error_of(refused)["code"] == "usage"
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy"]

    empty = tmp_path / "empty"
    empty.mkdir()
    assert ok(export(story, empty))["tables"]["events"] > 0


@pytest.fixture
def served(story: Path, tmp_path: Path) -> Path:
    """A copy of the story's home whose read model a "server" may hold open (the tests do)."""
    home = tmp_path / "served"
    home.mkdir()
    for name in ("events.sqlite", "catalog.duckdb"):
        (home / name).write_bytes((story / name).read_bytes())
    return home


def test_export_reads_a_fresh_snapshot_and_leaves_the_servers_file_alone(served: Path, tmp_path: Path) -> None:
    settings = Settings(home=served, event_store_url=None)
    with closing(duckdb.connect(str(served / "catalog.duckdb"))) as server:  # holds the file, as a server does
        published = snapshot.publish_snapshot(server, served, nullcontext())

        document = ok(export(served, tmp_path / "from-snapshot"))
        assert (document["source"], document["position"]) == ("snapshot", published)

        # a write the snapshot does not hold yet: no server answers for a new one, and the file is held
        with closing(open_catalog(settings)) as catalog:
            head = catalog.add_grant("agent:triage", "read", Meta(actor="t", reason="t")).position
        stale = export(served, tmp_path / "stale", TOOLCAT_DUCKDB_LOCK_WAIT_SECONDS="0.5")
        assert stale.code == 6 and error_of(stale)["code"] == "unavailable", stale.stderr
        assert not (tmp_path / "stale").exists()
    assert head > published


def test_export_asks_the_server_for_a_snapshot_when_the_one_it_has_is_stale(
        served: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(home=served, event_store_url=None)
    with closing(duckdb.connect(str(served / "catalog.duckdb"))) as server:
        snapshot.publish_snapshot(server, served, nullcontext())
    with closing(open_catalog(settings)) as catalog:
        head = catalog.add_grant("agent:triage", "read", Meta(actor="t", reason="t")).position
    asked: list[Path] = []

    def server_publishes(asking: Settings) -> int:
        """What a running server does when asked: catch up, then publish."""
        asked.append(asking.home)
        run_in_process(served, [["project"]])
        with closing(duckdb.connect(str(served / "catalog.duckdb"))) as con:
            return snapshot.publish_snapshot(con, served, nullcontext())

    monkeypatch.setattr(snapshot, "request_snapshot", server_publishes)
    with toolcat_environ("exporter"):
        run = toolcat_in_process(served, "export", "--format", "parquet", str(tmp_path / "out"), "--json")
    assert run.code == 0, run.stderr
    assert asked == [served]
    document = ok(run)
    assert (document["source"], document["position"]) == ("snapshot", head)
