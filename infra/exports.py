"""The read model written out as files other tools read: one writer per `toolcat export --format`.

A writer gets a read-only connection and an empty directory, fills the directory and answers what it
wrote. `write_export` runs one into a partial directory beside the target and renames it into place, so a
reader of the target never sees half an export.
"""
from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from domain.errors import UsageError

if TYPE_CHECKING:  # the command line lists the formats without loading DuckDB (`toolcat --help`)
    import duckdb

Writer = Callable[["duckdb.DuckDBPyConnection", Path], dict[str, Any]]

# Parquet as every reader reads it: format version 1 with Snappy, DuckDB's defaults today, written out so
# that a change of DuckDB's defaults never leaves pandas, Polars, Spark or an older DuckDB behind.
PARQUET_OPTIONS = "FORMAT parquet, COMPRESSION snappy, PARQUET_VERSION V1"


def _literal(text: str | Path) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def relations(con: duckdb.DuckDBPyConnection) -> tuple[list[str], list[str]]:
    """The read model's tables and views, by name."""
    from projections.rows import run
    tables = [r[0] for r in run(con, "SELECT table_name FROM duckdb_tables() WHERE database_name = "
                                     "current_database() AND NOT temporary ORDER BY table_name")]
    views = [r[0] for r in run(con, "SELECT view_name FROM duckdb_views() WHERE database_name = current_database() "
                                    "AND NOT internal AND NOT temporary ORDER BY view_name")]
    return tables, views


def _json_columns(con: duckdb.DuckDBPyConnection, relation: str) -> list[str]:
    from projections.rows import run
    return [r[0] for r in run(con, "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
                                   "AND table_name = ? AND data_type = 'JSON' ORDER BY column_index", [relation])]


def _copy_to_parquet(con: duckdb.DuckDBPyConnection, relation: str, path: Path) -> None:
    """One relation as one Parquet file, its JSON columns as text: Parquet's JSON annotation is recent, and
    older readers (pyarrow before 19, hence pandas) would see bytes; DuckDB reads the text back as JSON."""
    from projections.rows import run
    as_text = ", ".join(f"{_identifier(c)}::VARCHAR AS {_identifier(c)}" for c in _json_columns(con, relation))
    columns = f"* REPLACE ({as_text})" if as_text else "*"
    run(con, f"COPY (SELECT {columns} FROM {_identifier(relation)}) TO {_literal(path)} ({PARQUET_OPTIONS})")


def export_parquet(con: duckdb.DuckDBPyConnection, directory: Path) -> dict[str, Any]:
    """Every table and view as `<name>.parquet`; `schema.sql` creates the tables and the views over them
    (DuckDB's EXPORT DATABASE writes it and the tables' files), `load.sql` fills the tables from the files
    beside it (DuckDB's `IMPORT DATABASE 'DIR'` runs both). A view's file holds its rows at the time of the
    export, for readers that cannot run SQL."""
    from projections.rows import run
    tables, views = relations(con)
    run(con, f"EXPORT DATABASE {_literal(directory)} ({PARQUET_OPTIONS})")
    for relation in [t for t in tables if _json_columns(con, t)] + views:
        _copy_to_parquet(con, relation, directory / f"{relation}.parquet")
    # DuckDB writes absolute paths into load.sql; relative ones keep the directory movable (IMPORT DATABASE
    # reads them relative to the directory).
    (directory / "load.sql").write_text("".join(f"COPY {_identifier(t)} FROM {_literal(f'{t}.parquet')} "
                                                "(FORMAT parquet);\n" for t in tables))
    return {"tables": {t: _count(con, t) for t in tables}, "views": {v: _count(con, v) for v in views}}


def _count(con: duckdb.DuckDBPyConnection, relation: str) -> int:
    from projections.rows import scalar
    return scalar(con, f"SELECT count(*) FROM {_identifier(relation)}")


FORMATS: dict[str, Writer] = {"parquet": export_parquet}


def write_export(directory: Path, writer: Writer, con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Run `writer` into a partial directory beside `directory`, then rename it into place. The target
    must be new or an empty directory: an export never mixes with other files."""
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise UsageError(f"{directory} is not an empty directory; export into a new or empty one",
                         directory=str(directory))
    directory.parent.mkdir(parents=True, exist_ok=True)
    partial = directory.parent / f".{directory.name}.partial-{uuid.uuid4().hex[:12]}"
    partial.mkdir()
    try:
        document = writer(con, partial)
        partial.replace(directory)  # over an empty directory too: POSIX rename allows it
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return document
