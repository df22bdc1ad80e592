"""User SQL is read-only in fact (issue 17): every refused form is refused before it runs, with its reason,
and the sandboxed connection would refuse the file forms anyway; queries run under a timeout and a row
limit; answers encode JSON columns as JSON values in every media type. And the finding the server builds
on: a whole read model can be projected, spilled and checkpointed on a sandboxed connection."""
from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from domain.errors import SqlError, SqlRefused, SqlTimeout
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from projections.catchup import catch_up
from projections.fingerprint import fingerprint
from projections.projector import Projector
from projections.sql_encode import ARROW_STREAM, CSV, JSON, PARQUET, byte_limit, cut_by, encode, rows, truncated
from projections.user_sql import check_query, run_query, sandbox_config
from tests.doc_text import page, pages
from tests.support import run_example, run_in_process

SECRET = "toolcat-secret-4711"


@pytest.fixture
def sandboxed(story: int, home: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """The story's read model, opened read-only with the sandbox, as `toolcat sql` opens it."""
    con = open_read_model(Settings(home=home), read_only=True, config=sandbox_config())
    yield con
    con.close()


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret.csv"
    path.write_text(f"word\n{SECRET}\n")
    return path


def refused(con: duckdb.DuckDBPyConnection, query: str, reason: str) -> SqlRefused:
    with pytest.raises(SqlRefused) as caught:
        run_query(con, query, timeout_seconds=30, row_limit=100)
    assert caught.value.code == "sql_refused" and caught.value.exit_code == 3
    assert reason in caught.value.message, caught.value.message
    assert SECRET not in caught.value.message
    return caught.value


@pytest.mark.parametrize("statement, reason", [
    ("COPY (SELECT * FROM events) TO '{out}'", "COPY reads or writes files"),
    ("COPY events TO '{out}' (FORMAT parquet)", "COPY reads or writes files"),
    ("EXPORT DATABASE '{out}'", "EXPORT DATABASE writes files"),
    ("ATTACH '{out}' AS other", "ATTACH opens another database"),
    ("SELECT 1; COPY (SELECT 1) TO '{out}'", "one statement at a time"),
    ("EXPLAIN ANALYZE COPY (SELECT 1) TO '{out}'", "COPY reads or writes files"),
])
def test_statements_that_would_write_a_file_are_refused_and_write_nothing(
        sandboxed: duckdb.DuckDBPyConnection, tmp_path: Path, statement: str, reason: str) -> None:
    out = tmp_path / "out.file"
    refused(sandboxed, statement.format(out=out), reason)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [tmp_path / "home"]


@pytest.mark.parametrize("statement, reason", [
    ("SELECT * FROM read_text('{path}')", "read_text() is not allowed"),
    ("SELECT * FROM read_csv('{path}')", "read_csv() is not allowed"),
    ("SELECT * FROM read_blob('{path}')", "read_blob() is not allowed"),
    ("SELECT * FROM glob('{dir}/*')", "glob() is not allowed"),
    ("SELECT * FROM parquet_scan('{path}')", "parquet_scan() is not allowed"),
    ("SELECT * FROM '{path}'", "names a file"),
    ("WITH w AS (SELECT * FROM main.read_text('{path}')) SELECT * FROM w", "read_text() is not allowed"),
    ("SELECT (SELECT count(*) FROM read_csv_auto('{path}')) AS n", "read_csv_auto() is not allowed"),
    ("SELECT * FROM query('SELECT * FROM read_text(''{path}'')')", "query() is not allowed"),
    ("CALL read_text('{path}')", "CALL runs procedures"),
    ("DESCRIBE SELECT * FROM read_text('{path}')", "read_text() is not allowed"),
    ("EXPLAIN ANALYZE SELECT * FROM read_text('{path}')", "read_text() is not allowed"),
    ("SELECT 1; SELECT * FROM read_text('{path}')", "one statement at a time"),
])
def test_queries_that_would_read_a_file_are_refused(sandboxed: duckdb.DuckDBPyConnection, secret_file: Path,
                                                    statement: str, reason: str) -> None:
    refused(sandboxed, statement.format(path=secret_file, dir=secret_file.parent), reason)


@pytest.mark.parametrize("statement, reason", [
    ("INSTALL httpfs", "extensions cannot be installed or loaded"),
    ("LOAD httpfs", "extensions cannot be installed or loaded"),
    ("SET enable_external_access = true", "settings (SET, RESET, USE) cannot be changed"),
    ("SET memory_limit = '1GB'", "settings (SET, RESET, USE) cannot be changed"),
    ("RESET lock_configuration", "settings (SET, RESET, USE) cannot be changed"),
    ("PRAGMA threads = 1", "settings (SET, RESET, USE) cannot be changed"),
    ("PRAGMA enable_profiling", "PRAGMA enable_profiling may change settings"),
    ("PRAGMA disable_optimizer", "PRAGMA disable_optimizer may change settings"),
    ("CALL checkpoint()", "CALL runs procedures"),
    ("CHECKPOINT", "CALL runs procedures"),
    ("DELETE FROM events", "DELETE statements change the database"),
    ("DROP TABLE events", "DROP statements change the database"),
    ("CREATE TABLE mine AS SELECT 1", "CREATE statements change the database"),
    ("SELECT 1; SELECT 2", "this query holds 2"),
    ("PIVOT events ON type USING count(*)", "a PIVOT without an IN list runs several statements"),
])
def test_statements_that_would_change_settings_or_state_are_refused(
        sandboxed: duckdb.DuckDBPyConnection, statement: str, reason: str) -> None:
    settings_before = sandboxed.sql("SELECT name, value FROM duckdb_settings() ORDER BY name").fetchall()
    error = refused(sandboxed, statement, reason)
    assert error.details.get("statement") or error.details.get("pragma") or error.details.get("statements")
    assert sandboxed.sql("SELECT name, value FROM duckdb_settings() ORDER BY name").fetchall() == settings_before


@pytest.mark.parametrize("statement", [
    "COPY (SELECT 1) TO '{out}'",
    "SELECT * FROM read_text('{path}')",
    "SELECT * FROM '{path}'",
    "ATTACH '{out}' AS other",
    "EXPORT DATABASE '{out}'",
    "SET enable_external_access = true",
    "LOAD httpfs",
])
def test_the_sandboxed_connection_refuses_the_same_on_its_own(
        sandboxed: duckdb.DuckDBPyConnection, secret_file: Path, tmp_path: Path, statement: str) -> None:
    """The second fence: were the statement check to let one through, DuckDB itself would refuse."""
    out = tmp_path / "out.file"
    with pytest.raises(duckdb.Error) as caught:
        sandboxed.execute(statement.format(out=out, path=secret_file)).fetchall()
    assert isinstance(caught.value, (duckdb.PermissionException, duckdb.InvalidInputException)), caught.value
    assert SECRET not in str(caught.value) and not out.exists()


@pytest.mark.parametrize("query, column", [
    ("SELECT position, type FROM events WHERE position <= 3 ORDER BY position", "type"),
    ("WITH firsts AS (SELECT * FROM events WHERE position <= 3) SELECT count(*) AS n FROM firsts", "n"),
    ("FROM events SELECT max(position) AS head", "head"),
    ("EXPLAIN SELECT * FROM events", "explain_value"),
    ("EXPLAIN ANALYZE SELECT count(*) FROM events", "explain_value"),
    ("DESCRIBE events", "column_name"),
    ("DESCRIBE SELECT position FROM events", "column_name"),
    ("SHOW events", "column_type"),
    ("SHOW TABLES", "name"),
    ("SUMMARIZE events", "column_name"),
    ("SUMMARIZE SELECT position FROM events", "column_name"),
    ("PRAGMA table_info('tools')", "name"),
    ("SELECT * FROM duckdb_tables() WHERE table_name = 'events'", "table_name"),
    ("SELECT * FROM range(3)", "range"),
    ("PIVOT events ON type IN ('Policy.Recorded') USING count(*)", "Policy.Recorded"),
    ("-- the head\nSELECT max(position) AS head FROM events;", "head"),
])
def test_queries_run(sandboxed: duckdb.DuckDBPyConnection, query: str, column: str) -> None:
    check_query(query)
    table = run_query(sandboxed, query, timeout_seconds=30, row_limit=1000)
    assert column in table.column_names and table.num_rows > 0
    assert not truncated(table)


def test_a_query_that_does_not_run_is_an_sql_error(sandboxed: duckdb.DuckDBPyConnection) -> None:
    for query, said in (("SELEC 1", "syntax error"), ("SELECT nosuch FROM events", "nosuch"),
                        ("SELECT * FROM no_such_table", "no_such_table"), ("  ;  ", "empty")):
        with pytest.raises(SqlError) as caught:
            run_query(sandboxed, query, timeout_seconds=30, row_limit=10)
        assert caught.value.code == "sql_error" and caught.value.exit_code == 2
        assert said in caught.value.message


def test_a_slow_query_is_stopped_by_the_timeout(sandboxed: duckdb.DuckDBPyConnection) -> None:
    slow = "SELECT count(*) FROM range(100000000000) t(i) WHERE i % 7 = 3"
    with pytest.raises(SqlTimeout) as caught:
        run_query(sandboxed, slow, timeout_seconds=0.3, row_limit=10)
    assert caught.value.code == "sql_timeout" and caught.value.exit_code == 3
    assert caught.value.details == {"timeout_seconds": 0.3}
    # The connection is still usable, and a fast query is not affected by an earlier timer.
    assert rows(run_query(sandboxed, "SELECT 42 AS answer", timeout_seconds=30, row_limit=10)) == [{"answer": 42}]


def test_the_row_limit_cuts_the_answer_and_says_so(sandboxed: duckdb.DuckDBPyConnection, story: int) -> None:
    cut = run_query(sandboxed, "SELECT position FROM events ORDER BY position", timeout_seconds=30, row_limit=5)
    assert cut.column("position").to_pylist() == [1, 2, 3, 4, 5]
    assert truncated(cut) and cut.schema.metadata[b"toolcat.row_limit"] == b"5"
    whole = run_query(sandboxed, "SELECT position FROM events", timeout_seconds=30, row_limit=story)
    assert whole.num_rows == story and not truncated(whole)
    endless = run_query(sandboxed, "SELECT * FROM range(100000000000)", timeout_seconds=30, row_limit=3)
    assert endless.num_rows == 3 and truncated(endless)


def test_the_byte_limit_cuts_an_answer_of_a_few_huge_values_and_says_so(
        sandboxed: duckdb.DuckDBPyConnection) -> None:
    # given a query of 400 values of 100 kB each (40 MB), when the answer may hold 1 MB
    query = "SELECT i, repeat('x', 100000) AS big FROM range(400) t(i)"
    cut = run_query(sandboxed, query, timeout_seconds=30, row_limit=1000, max_bytes=1_000_000)
    # then it holds the first rows that fit, says the bytes cut it, and names the limit
    assert 0 < cut.num_rows < 10 and cut.nbytes <= 1_000_000
    assert cut.column("i").to_pylist() == list(range(cut.num_rows))
    assert truncated(cut) and cut_by(cut) == "bytes" and byte_limit(cut) == 1_000_000
    # while an answer under both limits is whole, and a row limit reached first says rows
    small = run_query(sandboxed, "SELECT 1 AS one", timeout_seconds=30, row_limit=10, max_bytes=1_000_000)
    assert not truncated(small) and cut_by(small) is None
    rows_first = run_query(sandboxed, "SELECT * FROM range(100)", timeout_seconds=30, row_limit=5, max_bytes=1_000_000)
    assert rows_first.num_rows == 5 and cut_by(rows_first) == "rows"


def test_json_columns_are_json_values_in_every_encoding(sandboxed: duckdb.DuckDBPyConnection) -> None:
    query = ("SELECT position, data, [data] AS listed, {'doc': data} AS nested FROM events "
             "WHERE type = 'Policy.Recorded'")
    table = run_query(sandboxed, query, timeout_seconds=30, row_limit=10)
    assert isinstance(table.schema.field("data").type, pa.JsonType)
    row = rows(table)[0]
    assert isinstance(row["data"], dict) and row["data"]["policy"]["name"] == "tyrum"
    assert row["listed"] == [row["data"]] and row["nested"] == {"doc": row["data"]}

    assert json.loads(encode(table, JSON)) == [row]
    csv_lines = encode(table, CSV).decode().splitlines()
    assert csv_lines[0] == "position,data,listed,nested"
    assert '"{""policy"":{' in csv_lines[1] and '\\"' not in csv_lines[1]

    streamed = pa.ipc.open_stream(encode(table, ARROW_STREAM)).read_all()
    assert streamed.equals(table) and streamed.schema.metadata[b"toolcat.truncated"] == b"false"
    parquet = pq.ParquetFile(io.BytesIO(encode(table, PARQUET)))
    assert parquet.schema.column(1).logical_type.type == "JSON"
    assert parquet.read().column("position").to_pylist() == [row["position"]]


def test_values_json_cannot_hold_are_written_as_text(sandboxed: duckdb.DuckDBPyConnection) -> None:
    query = ("SELECT 'nan'::DOUBLE AS nan, sum(position) AS total, 1.25::DECIMAL(5, 2) AS price, "
             "'\\x00\\xff'::BLOB AS raw, DATE '2026-11-22' AS day, MAP {'k': 1} AS m FROM events")
    answer = rows(run_query(sandboxed, query, timeout_seconds=30, row_limit=10))[0]
    assert answer["nan"] == "nan" and isinstance(answer["total"], int) and answer["price"] == 1.25
    assert answer["raw"] == "AP8=" and answer["day"] == "2026-11-22" and answer["m"] == {"k": 1}
    json.dumps(answer, allow_nan=False)


def test_a_whole_read_model_runs_sandboxed(story: int, home: Path, tmp_path: Path) -> None:
    """What `toolcat serve` relies on: its database opened with the sandbox at connect time still migrates,
    projects (Arrow tables registered), spills to its temp directory under a memory limit and
    checkpoints, while it can no longer reach any other file."""
    settings = Settings(home=home)
    spill = tmp_path / "spill"
    # One thread: with two, the spilling sort's per-thread buffers sometimes did not fit in 64 MB at all
    # (out of memory in a loaded run), which is not what this test is about.
    config = sandbox_config(memory_limit="64MB", temp_directory=str(spill), threads=1)
    con = open_read_model(settings, path=tmp_path / "served.duckdb", config=config)
    catalog = open_catalog(settings)
    try:
        assert catch_up(catalog, Projector(con)).position == story
        reference = duckdb.connect(str(settings.read_model_path), read_only=True)
        assert fingerprint(con) == fingerprint(reference)
        reference.close()
        big_sort = ("SELECT count(*) FROM (SELECT md5(i::VARCHAR) || repeat('x', 60) AS s "
                    "FROM range(2000000) t(i) ORDER BY s)")
        assert con.cursor().sql(big_sort).fetchall() == [(2000000,)]
        # The same sort in the same memory with nowhere to spill does not fit: the sandboxed one spilled.
        unspilled = duckdb.connect(config={"memory_limit": "64MB", "temp_directory": "", "threads": 1})
        with pytest.raises(duckdb.OutOfMemoryException):
            unspilled.sql(big_sort).fetchall()
        unspilled.close()
        assert spill.is_dir()
        con.execute("CHECKPOINT")
        for forbidden in (f"ATTACH '{tmp_path / 'other.duckdb'}' AS other",
                          f"COPY events TO '{tmp_path / 'events.parquet'}'",
                          f"EXPORT DATABASE '{tmp_path / 'export'}'"):
            with pytest.raises(duckdb.PermissionException):
                con.execute(forbidden)
        with pytest.raises(duckdb.InvalidInputException, match="locked"):
            con.execute("SET memory_limit = '1GB'")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "served.duckdb", "spill"]
    finally:
        catalog.close()
        con.close()


def test_the_sandbox_config_keeps_its_fences_whatever_else_is_asked() -> None:
    config: dict[str, Any] = sandbox_config(memory_limit="1GB")
    assert config["enable_external_access"] is False and config["lock_configuration"] is True
    assert config["autoload_known_extensions"] is False and config["autoinstall_known_extensions"] is False
    assert config["memory_limit"] == "1GB"
    with pytest.raises(ValueError, match="enable_external_access, lock_configuration"):
        sandbox_config(enable_external_access=True, lock_configuration=False)


@pytest.fixture
def dated_sandbox(home: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """The example story recorded on its clock, as the demo records it, opened as `toolcat sql` opens it."""
    run_example(home)
    run_in_process(home, [["project"]])
    con = open_read_model(Settings(home=home), read_only=True, config=sandbox_config())
    yield con
    con.close()


def test_the_documented_history_questions_are_allowed_and_answer(dated_sandbox: duckdb.DuckDBPyConnection) -> None:
    """Every ```sql block the documentation answers with a table runs under the rules, with the table's
    columns."""
    sandboxed = dated_sandbox
    answered = [found for name in pages()
                for found in re.findall(r"```sql\n(.*?)\n```\n\| (.*?) \|\n", page(name), flags=re.S)]
    assert len(answered) >= 5
    for query, header in answered:
        table = run_query(sandboxed, query, timeout_seconds=30, row_limit=1000)
        assert table.column_names == header.split(" | ") and table.num_rows > 0, query
