"""`toolcat sql`: one read-only query on the read model, as a table, JSON or CSV (docs/analysts.md:
"What `toolcat sql` allows"). The rules and the encodings are `projections.user_sql` and
`projections.sql_encode`, shared with `POST /v1/sql`."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from domain.errors import UsageError
from infra.cli.output import AS_JSON, Reply, Table
from infra.cli.registry import Commands

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    p = commands.add("sql", cmd_sql, "run one read-only query on the read model", "read")
    p.add_argument("query", metavar="QUERY", help="one query: SELECT, WITH, EXPLAIN, DESCRIBE, SHOW or SUMMARIZE")
    p.add_argument("--format", choices=("table", "json", "csv"),
                   help="table (the default), json (an array of row objects, as --json) or csv")


def output_format(ctx: Context) -> str:
    """The readable form asked for. --json answers with the JSON document whatever the readable form, so
    with another --format it would silently ignore one of the two: refused."""
    chosen = ctx.args.format
    if ctx.as_json and chosen not in (None, "json"):
        raise UsageError(f"--json answers with JSON; it cannot be combined with --format {chosen}",
                         format=chosen)
    return chosen or "table"


def cmd_sql(ctx: Context) -> Reply:
    from projections.sql_encode import csv_text, rows
    from projections.sql_worker import workers_for
    from projections.user_sql import run_query, sandbox_config
    chosen = output_format(ctx)
    settings = ctx.settings
    # In a worker process that bounds its memory and is killed at the timeout (projections/sql_worker.py).
    runner = getattr(ctx.backend, "user_sql", None)
    if runner is not None:  # a server's own command line (Accept: the reply type): the server's workers
        table = runner(ctx.args.query)
    elif ctx.backend is not None:  # a process that lends its connection but runs no workers
        table = run_query(ctx.read_only_model(config=sandbox_config()), ctx.args.query, settings.sql_timeout_seconds,
                          settings.sql_row_limit, settings.sql_max_bytes)
    else:
        ctx.read_only_model(config=sandbox_config())  # caught up, and held read-only: no writer meanwhile
        workers = workers_for(settings.sql_memory_bytes, settings.duckdb_memory_limit)
        try:
            table = workers.run(str(settings.read_model_path), ctx.args.query, settings.sql_timeout_seconds,
                                settings.sql_row_limit, settings.sql_max_bytes)
        finally:
            workers.close()
    document = rows(table)
    notes = cut_note(table)
    if chosen == "json":
        return Reply(document, AS_JSON, notes=notes)
    if chosen == "csv":
        return Reply(document, [csv_text(table)], notes=notes)
    return Reply(document, [Table(None, table.column_names, [list(row.values()) for row in document])],
                 notes=notes)


def cut_note(table: Any) -> list[str]:
    """What the answer says when a limit cut it short."""
    from projections.sql_encode import byte_limit, cut_by, row_limit
    if cut_by(table) == "rows":
        return [f"only the first {row_limit(table)} rows are shown (TOOLCAT_SQL_ROW_LIMIT); more rows matched"]
    if cut_by(table) == "bytes":
        return [f"only the first {table.num_rows} rows are shown: the answer reached {byte_limit(table)} bytes "
                "(TOOLCAT_SQL_MAX_BYTES); more rows matched"]
    return []
