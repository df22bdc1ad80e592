"""DuckDB schema migrations: numbered SQL files applied once each, in order."""
from __future__ import annotations

import duckdb

from projections.rows import run
from projections.sqlfiles import sql_files


def migration_files() -> list[tuple[int, str, str]]:
    """(number, file name, SQL) of every migration, in order."""
    return sorted((int(name.split("_", 1)[0]), name, text) for name, text in sql_files("migrations"))


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply every migration not yet applied; returns the names applied now."""
    run(con, "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version INTEGER NOT NULL, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)")
    done = {row[0] for row in run(con, "SELECT version FROM schema_migrations")}
    applied = []
    for number, name, sql in migration_files():
        if number in done:
            continue
        run(con, "BEGIN TRANSACTION")
        try:
            run(con, sql)
            run(con, "INSERT INTO schema_migrations VALUES (?, ?, now())", [number, name])
            run(con, "COMMIT")
        except BaseException:
            run(con, "ROLLBACK")
            raise
        applied.append(name)
    return applied

