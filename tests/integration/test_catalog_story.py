"""The catalog story, told on the SQLite file store and on PostgreSQL, read back through the DuckDB
read model: resolution, descriptors, pagination, the alias audit and the hash chain."""
from __future__ import annotations

from typing import Any

import pytest

from domain.errors import RetiredAlias, UnknownTool
from projections import queries
from projections.verify import verify
from projections.catchup import catch_up
from projections.canonical import GENESIS_HASH
from projections.projector import Projector
from tests.integration.helpers import Story, stored_records, tell_story


@pytest.fixture
def story(catalog: Any, read_model: Any, meta: Any) -> Story:
    """Given the whole story was written to the store and the read model caught up with it."""
    told = tell_story(catalog, meta)
    catch_up(catalog, Projector(read_model))
    return told


def test_resolve_canonical_alias_shim_and_deprecated_ids(story: Story, read_model: Any) -> None:
    assert queries.resolve(read_model, "read") == {
        "input": "read", "canonical_id": "read", "lifecycle": "canonical", "shim": False}
    assert queries.resolve(read_model, "github.create_issue") == {
        "input": "github.create_issue", "canonical_id": "mcp.github.create_issue", "lifecycle": "alias",
        "shim": False}
    assert queries.resolve(read_model, "tool.fs.read") == {
        "input": "tool.fs.read", "canonical_id": "read", "lifecycle": "alias", "shim": True}
    # the rename left the old ID behind as a deprecated alias
    assert queries.resolve(read_model, "web.search") == {
        "input": "web.search", "canonical_id": "websearch", "lifecycle": "deprecated", "shim": False}
    assert queries.resolve(read_model, "websearch")["lifecycle"] == "canonical"


def test_resolving_a_retired_alias_points_at_the_canonical_id(story: Story, read_model: Any) -> None:
    with pytest.raises(RetiredAlias) as raised:
        queries.resolve(read_model, "mcp.memory.seed")
    assert raised.value.code == "retired_alias"
    assert raised.value.exit_code == 3
    assert raised.value.details["canonical_id"] == "memory.seed"


def test_resolving_an_unknown_id_is_rejected(story: Story, read_model: Any) -> None:
    with pytest.raises(UnknownTool) as raised:
        queries.resolve(read_model, "no.such-tool")
    assert raised.value.code == "unknown_tool"
    assert raised.value.exit_code == 3


def test_tool_show_describes_a_tool_with_its_aliases(story: Story, read_model: Any) -> None:
    read = queries.tool_show(read_model, "read")
    assert read == {
        "canonical_id": "read", "family": "standalone", "group": "core", "tier": "default",
        "visibility": "public", "lifecycle": "canonical", "source": "builtin", "backing_server": None,
        "plugin": None, "description": "Read a file", "classes": ["source:sensitive"], "risk": "read_only",
        "schema_valid": True, "requires_state": False,
        "aliases": [{"id": "tool.fs.read", "lifecycle": "alias", "shim": True}],
        "schema_version": 1, "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    # found through the shim, the same descriptor
    assert queries.tool_show(read_model, "tool.fs.read") == read

    mcp = queries.tool_show(read_model, "mcp.github.create_issue")
    assert (mcp["source"], mcp["family"], mcp["backing_server"], mcp["classes"]) == \
        ("mcp", "mcp", "github", ["sink:network"])
    assert mcp["aliases"] == [{"id": "github.create_issue", "lifecycle": "alias", "shim": False}]

    plugin = queries.tool_show(read_model, "acme.notes.search")
    assert (plugin["source"], plugin["plugin"], plugin["family"], plugin["group"]) == \
        ("plugin", "acme", "acme.notes", "retrieval")
    assert plugin["schema_valid"] is False  # its input schema names a type JSON Schema does not have

    renamed = queries.tool_show(read_model, "web.search")
    assert renamed["canonical_id"] == "websearch"
    assert renamed["aliases"] == [{"id": "web.search", "lifecycle": "deprecated", "shim": False}]

    memory = queries.tool_show(read_model, "memory.seed")
    assert (memory["group"], memory["tier"], memory["visibility"], memory["risk"]) == \
        ("memory", "advanced", "internal", "safe_create")
    # removal step 4 drops the retired ID from the descriptor; the audit trail keeps it (a tombstone)
    assert memory["aliases"] == []
    assert queries.audit_alias(read_model, "mcp.memory.seed")["state"] == "retired"
    with pytest.raises(RetiredAlias):
        queries.tool_show(read_model, "mcp.memory.seed")


def test_tool_list_pages_concatenate_to_the_full_sorted_list(story: Story, read_model: Any) -> None:
    everything = queries.tool_list(read_model, limit=100)
    assert [t["canonical_id"] for t in everything["tools"]] == story.tools
    assert everything["next_cursor"] is None

    pages, cursor = [], None
    while True:
        page = queries.tool_list(read_model, limit=2, cursor=cursor)
        pages.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert len(pages) < 10, "the cursor never ends"
    assert [len(p["tools"]) for p in pages] == [2, 2, 1]
    assert [t for p in pages for t in p["tools"]] == everything["tools"]
    assert [p["next_cursor"] is None for p in pages] == [False, False, True]


def test_audit_alias_shows_the_whole_removal_path(story: Story, read_model: Any) -> None:
    report = queries.audit_alias(read_model, "mcp.memory.seed")
    assert report["alias"] == "mcp.memory.seed"
    assert report["canonical_id"] == "memory.seed"
    assert report["state"] == "retired"
    assert report["window"]["opened_release"] == "1.1.0"
    assert report["window"]["closed"] is True
    # a minor release after the shipping milestones (1.1.0 → 1.2.0), and after alias-only emission (1.2.0)
    assert report["window"]["earliest_removal_release"] == "1.2.1"

    milestones = {m["name"]: m for m in report["milestones"]}
    assert set(milestones) == {"canonical_shipped", "docs_shipped", "data_rewrite_shipped",
                               "alias_only_emission"}
    for name, position in story.milestones.items():
        assert milestones[name]["position"] == position
    assert milestones["alias_only_emission"]["release"] == "1.2.0"
    assert milestones["canonical_shipped"]["release"] == "1.1.0"
    assert milestones["docs_shipped"]["evidence"] == "docs_shipped evidence"

    steps = report["steps"]
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5]
    assert {s["step"]: s["position"] for s in steps} == story.steps
    assert steps[2]["position"] == steps[3]["position"] == story.retired_position
    assert steps[0]["position"] < steps[1]["position"] < story.retired_position < steps[4]["position"]
    assert all(s["actor"] == "tester" for s in steps)
    assert steps[4]["evidence"] == "legacy fixtures removed"


def test_verify_walks_every_stored_event(story: Story, catalog: Any, read_model: Any) -> None:
    stored = stored_records(catalog)
    report = verify(catalog, read_model)
    assert report["ok"] is True
    assert report["events"] == len(stored)
    tracking = Projector(read_model).tracking()
    assert report["head"] == tracking.hash
    assert tracking.position == stored[-1].position


def test_events_table_holds_one_chained_row_per_stored_event(story: Story, catalog: Any,
                                                             read_model: Any) -> None:
    stored = stored_records(catalog)
    rows = read_model.execute("SELECT position, prev_position, type, prev_hash, hash FROM events "
                              "ORDER BY position").fetchall()
    assert [r[0] for r in rows] == [r.position for r in stored]
    assert [r[2] for r in rows] == [r.topic for r in stored]
    assert rows[0][1] == 0
    assert rows[0][3] == GENESIS_HASH == "0" * 64
    for before, after in zip(rows, rows[1:]):
        assert after[1] == before[0], "prev_position must name the event before"
        assert after[3] == before[4], "prev_hash must be the hash of the event before"
    assert len({r[4] for r in rows}) == len(rows)
