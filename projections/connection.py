"""Every DuckDB connection toolcat opens (the read model, scratch copies, replays, the user-SQL parser,
snapshots) is opened here, so none of them ever writes to stdout: stdout holds a command's answer only.

DuckDB's Python client turns its progress bar on when it takes the interpreter for an interactive one,
which it does when `duckdb` is imported before `__main__` has a `__file__`: `python -m infra.cli` (as the
bench runs its own children, and as people run toolcat from a checkout), `python -c`, a REPL. The bar is
then drawn on stdout by any statement that runs longer than two seconds (a 200k-event catch-up on a busy
machine), before the `--json` document, which no longer parses.
"""
from __future__ import annotations

from typing import Any

import duckdb


def connect(database: str = ":memory:", read_only: bool = False,
            config: dict[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
    """`duckdb.connect` with the progress bar off. It is a setting of the connection, not of the database
    (DuckDB refuses it in `config`), so it is SET after connecting; a `lock_configuration` asked for (the
    user-SQL sandbox) is SET after it, since a locked configuration refuses every SET. Cursors of the
    connection start with the bar off whatever DuckDB guessed."""
    options = dict(config or {})
    lock = options.pop("lock_configuration", False)
    con = duckdb.connect(database, read_only=read_only, config=options)
    try:
        con.execute("SET enable_progress_bar = false")
        if lock:
            con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con
