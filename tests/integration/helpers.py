"""Shared pieces of the integration stories: the catalog story itself, table snapshots of the read
model, and the bodies of the child processes the fault and concurrency tests start.

Child-process bodies live here (a plain importable module) so that both `subprocess` children
(`python -c "from tests.integration.helpers import …"`) and `multiprocessing` "spawn" children can
import them.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from domain.base import Meta
from domain.catalog import Catalog
from domain.naming import preset
from domain.values import ToolSpec
from projections.rows import select_rows
from tests.support import run_python_child

# The read-model tables a projection fills, each with an ORDER BY that makes a snapshot deterministic.
TABLES = {
    "naming_policy": "position",
    "releases": "seq",
    "tools": "tool_key",
    "aliases": "alias",
    "alias_milestones": "alias, milestone",
    "alias_steps": "alias, step",
    "events": "position",
}

MILESTONE_ORDER = ("canonical_shipped", "docs_shipped", "data_rewrite_shipped", "alias_only_emission")


@dataclass
class Story:
    """What the catalog story wrote, with the positions the writes answered."""

    tools: list[str] = field(default_factory=list)
    milestones: dict[str, int] = field(default_factory=dict)
    steps: dict[int, int] = field(default_factory=dict)
    deprecated_position: int = 0
    retired_position: int = 0
    registered: dict[str, int] = field(default_factory=dict)


def spec(**fields: Any) -> ToolSpec:
    return ToolSpec(**fields)


def tell_story(catalog: Catalog, meta: Meta) -> Story:
    """An operator sets up a catalog, registers built-in, MCP and plugin tools, renames one, adds a
    shim and an alias, and walks the deprecated `mcp.memory.seed` through its whole window."""
    story = Story()
    catalog.init(preset("tyrum"), meta)
    catalog.publish_release("1.0.0", meta)

    def register(tool_id: str, tool_spec: ToolSpec) -> None:
        result = catalog.register_tool(tool_id, tool_spec, meta)
        story.registered[tool_id] = result.events[0].position

    register("read", spec(source="builtin", group="core", tier="default", visibility="public",
                          description="Read a file", classes=["source:sensitive"], risk="read_only",
                          input_schema={"type": "object", "properties": {"path": {"type": "string"}}}))
    register("memory.seed", spec(source="builtin", group="memory", tier="advanced", visibility="internal",
                                 description="Seed agent memory", risk="safe_create"))
    register("mcp.github.create_issue", spec(source="mcp", group="extension", tier="default",
                                             visibility="public", backing_server="github",
                                             description="Open a GitHub issue", classes=["sink:network"]))
    register("acme.notes.search", spec(source="plugin", plugin="acme", group="retrieval", tier="default",
                                       visibility="public", description="Search ACME notes",
                                       input_schema={"type": "no-such-type"}))
    register("web.search", spec(source="builtin", group="retrieval", tier="default", visibility="public",
                                description="Search the web"))
    story.tools = sorted(["read", "memory.seed", "mcp.github.create_issue", "acme.notes.search", "websearch"])

    catalog.rename_tool("web.search", "websearch", meta)
    catalog.add_alias("read", "tool.fs.read", True, meta)
    catalog.add_alias("mcp.github.create_issue", "github.create_issue", False, meta)

    # ARCH-21: the raw MCP ID of the memory tool becomes a deprecated alias of the platform family.
    catalog.add_alias("memory.seed", "mcp.memory.seed", False, meta)
    story.deprecated_position = catalog.deprecate_alias("mcp.memory.seed", meta).position
    catalog.publish_release("1.1.0", meta)
    for name in ("canonical_shipped", "docs_shipped", "data_rewrite_shipped"):
        story.milestones[name] = catalog.record_milestone(
            "mcp.memory.seed", name, "1.1.0", f"{name} evidence", meta).position
    catalog.publish_release("1.2.0", meta)
    story.milestones["alias_only_emission"] = catalog.record_milestone(
        "mcp.memory.seed", "alias_only_emission", "1.2.0", "alias emitted as metadata only", meta).position
    story.steps[1] = catalog.record_step("mcp.memory.seed", 1, "only memory.seed is documented", meta).position
    story.steps[2] = catalog.record_step("mcp.memory.seed", 2, "stored data migrated", meta).position
    catalog.publish_release("1.3.0", meta)
    story.retired_position = catalog.retire_alias("mcp.memory.seed", "1.3.0", meta).position
    story.steps[3] = story.steps[4] = story.retired_position
    story.steps[5] = catalog.record_step("mcp.memory.seed", 5, "legacy fixtures removed", meta).position
    return story


def stored_records(catalog: Catalog) -> list[Any]:
    """Every event in the store, in position order."""
    records: list[Any] = []
    after = 0
    while page := catalog.history(after=after, limit=500):
        records.extend(page)
        after = page[-1].position
    return records


def snapshot(con: duckdb.DuckDBPyConnection) -> dict[str, list[dict[str, Any]]]:
    """Every projected row of every read-model table, in a fixed order."""
    return {table: select_rows(con, f"SELECT * FROM {table} ORDER BY {order}")
            for table, order in TABLES.items()}


def row_counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return {table: con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in TABLES}


def tracking_row(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The whole tracking table, its update time included."""
    return select_rows(con, "SELECT * FROM tracking ORDER BY projection")


def run_child(function: str, *args: Any) -> int:
    """Run `function(*args)` of this module in a fresh Python process; returns its exit status."""
    code = (f"import json, sys; from tests.integration.helpers import {function}; "
            f"{function}(*json.loads(sys.argv[1]))")
    done = run_python_child(code, json.dumps([str(a) if isinstance(a, Path) else a for a in args]))
    if done.returncode not in (0, 9):
        raise AssertionError(f"child {function} failed ({done.returncode}):\n{done.stderr}")
    return done.returncode


# -- child-process bodies ----------------------------------------------------------------------------

def _open(home: str) -> tuple[Catalog, duckdb.DuckDBPyConnection]:
    from infra.settings import Settings
    from infra.wiring import open_catalog, open_read_model
    settings = Settings(home=Path(home), event_store_url=None)
    return open_catalog(settings), open_read_model(settings)


def child_crash_between_pages(home: str, page_size: int, die_after_pages: int) -> None:
    """Catch up page by page and die, without any cleanup, once `die_after_pages` pages committed."""
    from projections.catchup import catch_up
    from projections.projector import Projector
    catalog, con = _open(home)
    pages = 0

    def progress(_tracking: Any) -> None:
        nonlocal pages
        pages += 1
        if pages == die_after_pages:
            os._exit(9)

    catch_up(catalog, Projector(con), page_size=page_size, progress=progress)
    sys.exit(0)  # reaching here means the crash never happened


def child_crash_in_handler(home: str, event_type: str, nth: int) -> None:
    """Project the rest of the store in one batch; die inside the DuckDB transaction on the nth
    event of `event_type`, after earlier events of the batch were handled."""
    from projections.catalog_part import CatalogPart
    from projections.catchup import catch_up
    from projections.projector import Projector
    catalog, con = _open(home)
    part = CatalogPart()
    original = part.handlers[event_type]
    seen = 0

    def dying(envelope: Any, data: dict[str, Any]) -> None:
        nonlocal seen
        seen += 1
        if seen == nth:
            os._exit(9)
        original(envelope, data)

    part.handlers[event_type] = dying
    catch_up(catalog, Projector(con, parts=[part]))
    sys.exit(0)


def child_crash_after_flush(home: str) -> None:
    """Project the rest of the store in one batch; die after the part's rows were inserted in the
    open DuckDB transaction, before the events and tracking rows are written and committed."""
    from projections.catalog_part import CatalogPart
    from projections.catchup import catch_up
    from projections.projector import Projector
    catalog, con = _open(home)
    part = CatalogPart()
    original = part.flush

    def flush_then_die(connection: duckdb.DuckDBPyConnection) -> None:
        original(connection)
        os._exit(9)

    part.flush = flush_then_die  # type: ignore[method-assign]
    catch_up(catalog, Projector(con, parts=[part]))
    sys.exit(0)


def child_race(settings_dump: dict[str, Any], open_lock: Any, barrier: Any, results: Any, name: str,
               action: str, args: list[Any]) -> None:
    """Build a catalog in this process, prepare one command's batch, wait until the other child has
    prepared its own, then save. Reports ("ok", WriteResult) or ("conflict", exit_code, code).

    Opening the store is serialised by `open_lock`: the race under test is the one between two
    saves (opening at the same moment is its own test)."""
    from domain.errors import Conflict
    from infra.settings import Settings
    from infra.wiring import open_catalog
    try:
        with open_lock:
            catalog = open_catalog(Settings(**settings_dump))
    except BaseException as error:
        barrier.abort()  # let the other racer fail fast instead of waiting for us
        results.put((name, "error", repr(error), type(error).__name__))
        return
    original_save = catalog.save

    def save_after_barrier(*aggregates: Any, **kwargs: Any) -> Any:
        barrier.wait(timeout=60)  # both batches are built: now both writers race to save
        return original_save(*aggregates, **kwargs)

    catalog.save = save_after_barrier  # type: ignore[method-assign]
    meta = Meta(actor=name, reason="race")
    try:
        if action == "register":
            tool_id, description = args
            result = catalog.register_tool(tool_id, ToolSpec(source="builtin", group="core", tier="default",
                                                             visibility="public", description=description),
                                           meta)
        elif action == "alias":
            canonical, alias = args
            result = catalog.add_alias(canonical, alias, False, meta)
        else:
            raise ValueError(action)
        results.put((name, "ok", result.model_dump(), None))
    except Conflict as error:
        results.put((name, "conflict", error.exit_code, error.code))
    except BaseException as error:  # report anything else to the test instead of hanging it
        barrier.abort()
        results.put((name, "error", repr(error), type(error).__name__))
    finally:
        catalog.close()


def child_open(settings_dump: dict[str, Any], barrier: Any, results: Any, name: str) -> None:
    """Open the catalog at the same moment as the other children, then read the whole store."""
    from infra.settings import Settings
    from infra.wiring import open_catalog
    settings = Settings(**settings_dump)
    barrier.wait(timeout=60)
    try:
        catalog = open_catalog(settings)
    except BaseException as error:
        results.put((name, "error", f"{type(error).__name__}: {error}"))
        return
    try:
        stored_records(catalog)
        results.put((name, "ok", None))
    except BaseException as error:
        results.put((name, "error", f"{type(error).__name__}: {error}"))
    finally:
        catalog.close()

