"""Catalog as code: a manifest planned against the catalog, held as a proposal, applied by its id.

Every story runs `toolcat` in this process on a real SQLite store and DuckDB read model."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import yaml

from projections.scratch import effective_sets, set_changes
from tests.support import PROJECT_ROOT, error_of, ok

SPRING_VOYAGE = PROJECT_ROOT / "examples" / "spring-voyage.manifest.yaml"


def sets_of(home: Path) -> dict[str, Any]:
    """Every subject's effective set, read from the home's read model."""
    con = duckdb.connect(str(home / "catalog.duckdb"), read_only=True)
    try:
        return effective_sets(con)
    finally:
        con.close()


def head_of(cli: Any) -> int:
    return ok(cli("sql", "SELECT max(position) AS head FROM events"))[0]["head"]


def edited(manifest: Path, tmp_path: Path, change: Any, name: str = "edited.yaml") -> Path:
    """A copy of a manifest with `change` applied to its data."""
    data = yaml.safe_load(manifest.read_text())
    change(data)
    target = tmp_path / name
    target.write_text(yaml.safe_dump(data, sort_keys=False))
    return target


def test_export_then_plan_is_an_empty_plan(story: int, cli: Any, tmp_path: Path) -> None:
    # given the bundled Tyrum story (renames, shims, a retired alias with its whole window), exported
    exported = ok(cli("export", "--format", "manifest", "-o", str(tmp_path / "catalog.yaml")))
    assert exported["position"] == story
    # when the export is planned
    planned = ok(cli("plan", str(tmp_path / "catalog.yaml")))
    # then nothing would change
    assert (planned["commands"], planned["violations"], planned["effects"]) == ([], [], {})
    assert planned["base_position"] == story


def test_plan_then_apply_builds_the_manifest_and_predicts_its_effects(cli: Any, home: Path, tmp_path: Path) -> None:
    # given an empty home and the Spring Voyage manifest
    # when it is planned, then the commands come in an order that runs, each with its risk tag
    planned = ok(cli("plan", str(SPRING_VOYAGE)))
    commands = [c["command"] for c in planned["commands"]]
    assert commands[0] == "toolcat init --policy spring-voyage"
    assert commands.index("toolcat unit create acme") < commands.index("toolcat unit create research --parent acme")
    assert {c["risk"] for c in planned["commands"]} == {"safe_create"}
    assert planned["violations"] == []
    assert planned["effects"]["agent:librarian"]["gains"][:3] == ["acme.cite", "acme.summarize", "acme.translate"]
    # and nothing but the proposal was written
    assert ok(cli("sql", "SELECT list(type) AS types FROM events"))[0]["types"] == ["Proposal.Made"]
    before = sets_of(home)
    # when the proposal is applied
    applied = ok(cli("apply", planned["proposal_id"]))
    # then every command was saved in one write, tagged with the proposal id
    tags = ok(cli("sql", "SELECT DISTINCT idempotency_key AS tag FROM events WHERE position > 1"))
    assert tags == [{"tag": f"proposal:{planned['proposal_id']}"}]
    assert applied["events"][-2]["type"] == "Proposal.Applied"
    # and the catalog exports as the manifest, and the predicted effects are the effects
    assert ok(cli("export", "--format", "manifest"))["manifest"] == yaml.safe_load(SPRING_VOYAGE.read_text())
    assert set_changes(before, sets_of(home)) == planned["effects"]
    assert ok(cli("proposal", "show", planned["proposal_id"]))["state"] == "applied"


def test_a_concurrent_write_makes_apply_conflict_and_a_new_plan_applies(cli: Any, tmp_path: Path) -> None:
    # given a catalog built from the manifest, and a plan that grants the helpdesk one more tool
    ok(cli("apply", ok(cli("plan", str(SPRING_VOYAGE)))["proposal_id"]))
    grant_more = edited(SPRING_VOYAGE, tmp_path, lambda d: d["agents"]["helpdesk"].setdefault("grants", [])
                        .append("arxiv.search"))
    stale = ok(cli("plan", str(grant_more)))
    assert [c["command"] for c in stale["commands"]] == ["toolcat grant add agent:helpdesk arxiv.search"]
    # (the helpdesk sees it already, through the arxiv connector bound to acme: only its provenance changes)
    assert stale["effects"] == {"agent:helpdesk": {"gains": [], "loses": [], "changes": [
        {"tool_id": "arxiv.search", "field": "provenance", "from": "connector:arxiv", "to": "explicit"}]}}
    # when someone else changes the catalog before it is applied
    ok(cli("grant", "add", "unit:support", "websearch.query"))
    head = head_of(cli)
    # then applying it is a conflict that writes nothing
    refused = cli("apply", stale["proposal_id"])
    assert (refused.code, error_of(refused)["code"]) == (4, "stale_proposal")
    assert head_of(cli) == head
    # and a new plan (which now also takes back the concurrent grant) applies
    fresh = ok(cli("plan", str(grant_more)))
    assert [(c["command"], c["risk"]) for c in fresh["commands"]] == [
        ("toolcat grant add agent:helpdesk arxiv.search", "safe_create"),
        ("toolcat grant revoke unit:support websearch.query", "destructive_delete")]
    ok(cli("apply", fresh["proposal_id"], "--confirm-destructive"))
    assert cli("plan", str(grant_more)).json["commands"] == []


def test_a_tampered_or_withdrawn_proposal_id_is_refused(cli: Any) -> None:
    planned = ok(cli("plan", str(SPRING_VOYAGE)))
    proposal_id = planned["proposal_id"]
    # a proposal id that was never issued
    tampered = proposal_id[:-1] + ("0" if proposal_id[-1] != "0" else "1")
    unknown = cli("apply", tampered)
    assert (unknown.code, error_of(unknown)["code"]) == (3, "unknown_proposal")
    # an id outside the grammar
    assert error_of(cli("apply", "P-1; rm"))["code"] == "invalid_name"
    # a withdrawn proposal
    ok(cli("proposal", "withdraw", proposal_id))
    closed = cli("apply", proposal_id)
    assert (closed.code, error_of(closed)["code"]) == (3, "proposal_closed")
    listed = ok(cli("proposal", "list"))["proposals"]
    assert [(p["proposal_id"], p["state"]) for p in listed] == [(proposal_id, "withdrawn")]
    # and nothing but the proposal's own events was written
    assert ok(cli("sql", "SELECT list(type) AS types FROM events"))[0]["types"] == [
        "Proposal.Made", "Proposal.Withdrawn"]


def test_a_destructive_plan_needs_confirmation(cli: Any, tmp_path: Path) -> None:
    ok(cli("apply", ok(cli("plan", str(SPRING_VOYAGE)))["proposal_id"]))
    # given a plan that unbinds a connector
    unbind = edited(SPRING_VOYAGE, tmp_path, lambda d: d["units"]["support"].pop("connectors"))
    planned = ok(cli("plan", str(unbind)))
    assert planned["commands"] == [{"command": "toolcat connector unbind slack --unit support",
                                    "risk": "destructive_delete"}]
    assert planned["effects"]["unit:support"]["loses"] == ["chat.post_message", "chat.read_channel"]
    head = head_of(cli)
    # when it is applied without confirmation, then it is refused and nothing is written
    refused = cli("apply", planned["proposal_id"])
    assert (refused.code, error_of(refused)["code"]) == (3, "confirmation_required")
    assert head_of(cli) == head
    # and with confirmation it applies
    ok(cli("apply", planned["proposal_id"], "--confirm-destructive"))
    assert "chat.read_channel" not in sets_of_cli(cli, "unit:support")


def sets_of_cli(cli: Any, subject: str) -> list[str]:
    return [t["tool_id"] for t in ok(cli("effective", subject))["tools"]]


def test_a_plan_reports_the_rules_it_would_break_with_the_commands_codes(cli: Any, tmp_path: Path) -> None:
    ok(cli("apply", ok(cli("plan", str(SPRING_VOYAGE)))["proposal_id"]))

    def break_rules(data: dict[str, Any]) -> None:
        data["agents"]["helpdesk"]["grants"] = ["nosuch.tool"]      # unknown_tool
        data["tools"].pop("sv.tools.discover")                     # a tool is never removed
    head = head_of(cli)
    refused = cli("plan", str(edited(SPRING_VOYAGE, tmp_path, break_rules)))
    # then the plan is answered with every rule it breaks, exit 3, and not held: nothing is written
    assert refused.code == 3
    assert sorted(v["code"] for v in refused.json["violations"]) == ["unknown_tool", "unsupported_change"]
    assert refused.json["proposal_id"] is None and refused.json["commands"]
    assert head_of(cli) == head


def test_a_toml_manifest_plans_like_yaml(cli: Any, tmp_path: Path) -> None:
    toml = tmp_path / "catalog.toml"
    toml.write_text('policy = "tyrum"\n[units.eng]\n[agents.triage]\nunit = "eng"\ngrants = ["read"]\n'
                    '[tools.read]\nsource = "builtin"\ngroup = "core"\ntier = "default"\nvisibility = "public"\n')
    planned = ok(cli("plan", str(toml)))
    assert [c["command"] for c in planned["commands"]] == [
        "toolcat init --policy tyrum",
        "toolcat tool register read --source builtin --group core --tier default --visibility public",
        "toolcat unit create eng", "toolcat agent create triage --unit eng", "toolcat grant add agent:triage read"]
    assert planned["effects"] == {"agent:triage": {"gains": ["read"], "loses": [], "changes": []}}


def test_an_invalid_manifest_is_a_usage_error_naming_the_field(cli: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("agents:\n  triage:\n    unit: eng\n    colour: blue\n")
    refused = cli("plan", str(bad))
    assert refused.code == 2
    assert "agents.triage.colour" in error_of(refused)["message"]
