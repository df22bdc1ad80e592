"""`toolcat export --format FORMAT DIR`: the read model written out as files for other tools (formats:
infra/exports.py).

When a server owns the home's read model, the export must not fight it for the file: it reads the
snapshot the server publishes (infra/http/snapshot.py, through infra/serving.py) when that is as fresh
as the store, or asks the server for one; without a server it reads `catalog.duckdb`, caught up with the store as every read is.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from domain.errors import UsageError
from infra.cli.output import Reply
from infra.cli.registry import Commands
from infra.exports import FORMATS, write_export

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    import duckdb
    from infra.context import Context


def register(commands: Commands) -> None:
    p = commands.add("export", cmd_export, "write the read model out as files other tools read", "read")
    p.add_argument("directory", metavar="DIR", nargs="?", help="a new or empty directory (parquet)")
    p.add_argument("--format", required=True, choices=tuple(FORMATS) + ("manifest",),
                   help="parquet: every table and view as Parquet, with schema.sql and load.sql; manifest: the "
                        "catalog as a YAML manifest that `toolcat plan` reads")
    p.add_argument("-o", "--output", metavar="DIR|FILE",
                   help="where to write: the directory (parquet) or the file (manifest; '-' or none: stdout)")
    p.set_defaults(runs_here=True)  # run here even while a server runs: it reads the server's snapshot


def _export_manifest(ctx: Context) -> Reply:
    """The catalog as a manifest; `plan` of this very file answers an empty plan."""
    from projections.manifest_export import current_manifest
    from projections.tracking import read_tracking
    from infra.manifests import manifest_yaml  # PyYAML only when a manifest is written
    own = _fresh_snapshot(ctx)
    con = own or ctx.read_model()
    try:
        position = read_tracking(con).position
        manifest = current_manifest(con)
    finally:
        if own is not None:
            own.close()
    text = manifest_yaml(manifest)
    target = ctx.args.output or ctx.args.directory
    document = {"format": "manifest", "position": position, "file": None, "manifest": manifest.document()}
    if target in (None, "-"):
        return Reply(document, [text.rstrip("\n")])
    Path(target).write_text(text)
    document["file"] = target
    return Reply(document, [f"wrote the catalog's manifest at position {position} to {target}"])


def _fresh_snapshot(ctx: Context) -> duckdb.DuckDBPyConnection | None:
    """The home's snapshot when it holds everything the store holds, asking a server for one if needed."""
    from infra.serving import fresh_snapshot  # the HTTP client only when exporting, not on every command's start
    return fresh_snapshot(ctx.settings, ctx.catalog.recorder.max_notification_id() or 0)


def cmd_export(ctx: Context) -> Reply:
    from projections.tracking import read_tracking
    if ctx.args.format == "manifest":
        return _export_manifest(ctx)
    target = ctx.args.output or ctx.args.directory
    if target is None:
        raise UsageError("--format parquet writes a directory: name it (DIR, or -o DIR)")
    directory = Path(target)
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
