"""`tool update --schema` and `catalog compatibility` as an operator runs them (in process, real SQLite and
DuckDB): refusals name the property and the rule and write nothing; accepted versions are in the read model's
history, so a replay until any position still matches the live read model, and `tool show` shows the schema in
force and its version."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support import error_of, ok

V1 = {"type": "object", "required": ["path"],
      "properties": {"path": {"type": "string"}, "depth": {"type": "integer"}}}
DEPTH_REQUIRED = {**V1, "required": ["path", "depth"]}
FOLLOW_ADDED = {**V1, "properties": {**V1["properties"], "follow": {"type": "boolean"}}}


def schema_file(tmp_path: Path, schema: Any, name: str = "schema.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(schema))
    return str(path)


@pytest.fixture
def reader(cli: Any, tmp_path: Path) -> Any:
    """Given builtin `read` registered with schema V1, granted to agent `scout` of unit `ops`."""
    ok(cli("tool", "register", "read", "--source", "builtin", "--group", "core", "--tier", "default",
           "--visibility", "public", "--schema", schema_file(tmp_path, V1, "v1.json")))
    ok(cli("unit", "create", "ops"))
    ok(cli("agent", "create", "scout", "--unit", "ops"))
    ok(cli("grant", "add", "agent:scout", "read"))
    return cli


def head(cli: Any) -> int:
    return ok(cli("sql", "SELECT max(position) AS p FROM events"))[0]["p"]


def test_a_breaking_schema_under_backward_is_refused_naming_the_property_and_nothing_is_written(
        reader: Any, tmp_path: Path) -> None:
    before = head(reader)
    refused = reader("tool", "update", "read", "--schema", schema_file(tmp_path, DEPTH_REQUIRED))
    assert refused.code == 3
    error = error_of(refused)
    assert error["code"] == "incompatible_schema"
    assert "depth: newly required property" in error["message"] and "backward" in error["message"]
    assert error["details"]["mode"] == "backward"
    assert head(reader) == before
    assert ok(reader("tool", "show", "read"))["schema_version"] == 1


def test_a_compatible_schema_becomes_version_2_and_tool_show_shows_it(reader: Any, tmp_path: Path) -> None:
    written = ok(reader("tool", "update", "read", "--schema", schema_file(tmp_path, FOLLOW_ADDED)))
    assert [e["type"] for e in written["events"]] == ["Tool.SchemaUpdated"]
    shown = ok(reader("tool", "show", "read"))
    assert (shown["schema_version"], shown["input_schema"], shown["schema_valid"]) == (2, FOLLOW_ADDED, True)
    history = ok(reader("sql", "SELECT version, valid_to IS NULL AS current FROM tool_schema_history "
                               "ORDER BY version"))
    assert history == [{"version": 1, "current": False}, {"version": 2, "current": True}]


def test_under_none_a_breaking_schema_is_accepted_and_under_full_a_loosened_one_is_refused(
        reader: Any, tmp_path: Path) -> None:
    ok(reader("catalog", "compatibility", "full"))
    refused = reader("tool", "update", "read", "--schema", schema_file(tmp_path, {**V1, "required": []}))
    assert error_of(refused)["code"] == "incompatible_schema"
    assert "forward: path: newly required property" in error_of(refused)["message"]
    ok(reader("catalog", "compatibility", "none"))
    ok(reader("tool", "update", "read", "--schema", schema_file(tmp_path, DEPTH_REQUIRED)))
    modes = ok(reader("sql", "SELECT mode FROM compatibility_modes ORDER BY position"))
    assert [m["mode"] for m in modes] == ["full", "none"]


def test_an_invalid_schema_is_refused_by_the_metaschema_check(reader: Any, tmp_path: Path) -> None:
    refused = reader("tool", "update", "read", "--schema", schema_file(tmp_path, {"type": "text"}))
    assert (refused.code, error_of(refused)["code"]) == (3, "invalid_schema")


def test_after_updates_a_replay_until_every_position_matches_the_live_read_model(
        reader: Any, tmp_path: Path) -> None:
    before_update = head(reader)
    ok(reader("tool", "update", "read", "--schema", schema_file(tmp_path, FOLLOW_ADDED)))
    ok(reader("catalog", "compatibility", "none"))
    ok(reader("tool", "update", "read", "--schema", schema_file(tmp_path, {"type": "object"}, "v3.json")))
    for position in (before_update, before_update + 1, head(reader)):
        replay = ok(reader("audit", "replay", "--until", str(position)))
        assert replay["matches"] is True, position
    past = ok(reader("audit", "fingerprint", "--at", str(before_update)))
    assert past["fingerprint"] == ok(reader("audit", "replay", "--until", str(before_update)))["fingerprint"]


def test_a_schema_made_valid_enables_the_tool_for_its_holders(cli: Any, tmp_path: Path) -> None:
    ok(cli("tool", "register", "read", "--source", "builtin", "--group", "core", "--tier", "default",
           "--visibility", "public", "--schema", schema_file(tmp_path, {"type": 7}, "bad.json")))
    ok(cli("unit", "create", "ops"))
    ok(cli("agent", "create", "scout", "--unit", "ops"))
    ok(cli("grant", "add", "agent:scout", "read"))
    assert ok(cli("effective", "agent:scout"))["tools"][0]["exposure"] == "disabled_invalid_schema"
    ok(cli("tool", "update", "read", "--schema", schema_file(tmp_path, DEPTH_REQUIRED)))
    assert ok(cli("effective", "agent:scout"))["tools"][0]["exposure"] == "enabled"
    assert ok(cli("audit", "replay"))["matches"] is True


def test_a_plan_records_a_new_schema_version_under_the_catalogs_mode_and_the_export_names_the_mode(
        reader: Any, tmp_path: Path) -> None:
    ok(reader("catalog", "compatibility", "forward"))
    manifest = ok(reader("export", "--format", "manifest"))["manifest"]
    assert manifest["compatibility"] == "forward"
    del manifest["compatibility"]  # the catalog's mode decides
    manifest["tools"]["read"]["input_schema"] = DEPTH_REQUIRED  # breaks backward, not forward
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest))
    planned = ok(reader("plan", str(path)))
    assert (planned["commands"], planned["violations"]) == (
        [{"command": "toolcat tool update read --schema schema.json", "risk": "destructive_update"}], [])
    ok(reader("apply", planned["proposal_id"], "--confirm-destructive"))
    shown = ok(reader("tool", "show", "read"))
    assert (shown["schema_version"], shown["input_schema"]) == (2, DEPTH_REQUIRED)
