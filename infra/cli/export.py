"""`toolcat export --format FORMAT DIR`: the read model written out as files for other tools (formats:
infra/exports.py).

When a server owns the home's read model, the export must not fight it for the file: it reads the
snapshot the server publishes (infra/http/snapshot.py) when that is as fresh as the store, or asks the
server for one; without a server it reads `catalog.duckdb`, caught up with the store as every read is.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from infra.cli.output import Reply
from infra.cli.registry import Commands
from infra.context import Context
from infra.exports import FORMATS, write_export
from infra.http import snapshot
from projections.projector import read_tracking


def register(commands: Commands) -> None:
    p = commands.add("export", cmd_export, "write the read model out as files other tools read", "read")
    p.add_argument("directory", metavar="DIR", help="a new or empty directory")
    p.add_argument("--format", required=True, choices=tuple(FORMATS),
                   help="parquet: every table and view as Parquet, with schema.sql and load.sql")
    p.set_defaults(reads_snapshot=True)  # run here even while a server runs: it reads the server's snapshot


def _fresh_snapshot(ctx: Context) -> duckdb.DuckDBPyConnection | None:
    """The home's snapshot when it holds everything the store holds, asking a server for one if needed."""
    head = ctx.catalog.recorder.max_notification_id() or 0
    con = snapshot.open_snapshot(ctx.settings.home, head)
    if con is None and snapshot.request_snapshot(ctx.settings) is not None:
        con = snapshot.open_snapshot(ctx.settings.home, head)
    return con


def cmd_export(ctx: Context) -> Reply:
    directory = Path(ctx.args.directory)
    own = _fresh_snapshot(ctx)
    con = own or ctx.read_only_model()
    try:
        position = read_tracking(con).position
        written = write_export(directory, FORMATS[ctx.args.format], con)
    finally:
        if own is not None:
            own.close()
    source = "snapshot" if own is not None else "read model"
    document = {"directory": str(directory), "format": ctx.args.format, "position": position, "source": source,
                **written}
    return Reply(document, [f"wrote {len(written['tables'])} tables and {len(written['views'])} views "
                            f"({ctx.args.format}) to {directory}, at position {position}, from the {source}"])
