"""`toolcat audit replay`: the store replayed into a scratch read model says, bit for bit, what the live
read model says — at the head, at any earlier position, after a rebuild, and when the read model was
built from Kafka instead of the store; and a read model changed by hand is caught.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from infra.settings import Settings
from projections.fingerprint import fingerprint
from projections.tracking import read_tracking
from tests.integration.kafka_support import kafka_env
from tests.support import Run, ok


def replayed(run: Run) -> dict[str, Any]:
    document = ok(run)
    assert set(document) >= {"position", "fingerprint", "live_fingerprint", "matches"}
    return document


def fingerprint_of(path: Path) -> tuple[int, str]:
    """The read model file's (position, fingerprint), opened read-only: nothing here can change it."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return read_tracking(con).position, fingerprint(con)
    finally:
        con.close()


def test_a_replay_to_the_head_matches_the_live_read_model(story: int, toolcat: Any) -> None:
    result = replayed(toolcat("audit", "replay"))
    assert result["matches"] is True
    assert result["position"] == story
    assert result["fingerprint"] == result["live_fingerprint"]
    assert len(result["fingerprint"]) == 64


def test_a_replay_until_any_position_matches_the_live_read_model_there(story: int, cli: Any, toolcat: Any) -> None:
    revoked = ok(cli("sql", "select position from events where type = 'Grants.Revoked'"))[0]["position"]
    seen = set()
    for until in (1, story // 2, revoked - 1, story - 1):
        result = replayed(toolcat("audit", "replay", "--until", str(until)))
        assert result["matches"] is True, (until, result)
        assert result["position"] == until
        seen.add(result["fingerprint"])
    # each position has its own fingerprint: they describe different histories
    assert len(seen) == 4


def test_replaying_twice_and_after_a_rebuild_gives_the_same_fingerprint(story: int, home: Path,
                                                                         toolcat: Any) -> None:
    first = replayed(toolcat("audit", "replay"))
    second = replayed(toolcat("audit", "replay"))
    assert first == second
    live_before = fingerprint_of(home / "catalog.duckdb")
    assert live_before == (story, first["live_fingerprint"])

    assert ok(toolcat("rebuild"))["position"] == story

    after = replayed(toolcat("audit", "replay"))
    assert after["matches"] is True
    assert after["fingerprint"] == first["fingerprint"]
    assert after["live_fingerprint"] == first["live_fingerprint"]
    assert fingerprint_of(home / "catalog.duckdb") == live_before


def test_a_read_model_built_from_kafka_has_the_fingerprint_of_one_built_from_the_store(
        story: int, home: Path, tmp_path: Path, kafka_settings: Settings, toolcat: Any) -> None:
    env = kafka_env(kafka_settings)
    # the store-built read model is at the head (the story's last read caught it up)
    store_built = fingerprint_of(home / "catalog.duckdb")
    assert store_built[0] == story

    relayed = ok(toolcat("relay", env=env, timeout=120))
    assert relayed["position"] == story

    # a second home, with no event store of its own, projects the topic
    other = tmp_path / "from-kafka"
    projected = ok(toolcat("project", "--from", "kafka", "--home", str(other), env=env, timeout=120))
    assert projected["position"] == story
    assert projected["source"] == "kafka"

    kafka_built = fingerprint_of(other / "catalog.duckdb")
    assert kafka_built == store_built
    # and the same holds as of an earlier position
    for at in (story // 2, story - 3):
        cons = [duckdb.connect(str(path), read_only=True) for path in (home / "catalog.duckdb",
                                                                         other / "catalog.duckdb")]
        try:
            assert fingerprint(cons[0], at) == fingerprint(cons[1], at)
        finally:
            for con in cons:
                con.close()


TAMPERINGS = {
    # a current effective set served by `toolcat effective` now says something the history never said
    # (the allowlist of agent:triage does not name tool.desktop.act: it is disabled_by_agent_allowlist)
    "effective_tools": "UPDATE effective_tools SET exposure = 'enabled' WHERE subject_kind = 'agent' AND "
                       "subject = 'triage' AND tool_id = 'tool.desktop.act' AND exposure <> 'enabled'",
    # the same, in the per-subject documents `toolcat effective` serves
    "effective_documents": "UPDATE effective_documents SET tools = replace(tools::VARCHAR, "
                           "'disabled_by_agent_allowlist', 'enabled')::JSON WHERE subject = 'agent:triage'",
    # a grant appears to have lasted from a different position
    "grant_history": "UPDATE grant_history SET valid_from = valid_from - 1 WHERE rowid = (SELECT min(rowid) FROM "
                     "grant_history)",
}


@pytest.mark.parametrize("table", sorted(TAMPERINGS))
def test_a_read_model_changed_by_hand_does_not_match_its_replay(story: int, home: Path, toolcat: Any,
                                                                 table: str) -> None:
    assert replayed(toolcat("audit", "replay"))["matches"] is True

    con = duckdb.connect(str(home / "catalog.duckdb"))
    try:
        assert con.execute(TAMPERINGS[table]).fetchone()[0] == 1  # one row changed
    finally:
        con.close()
    if table == "effective_documents":  # users are now served a set the history never produced
        served = ok(toolcat("effective", "agent:triage"))["tools"]
        recomputed = ok(toolcat("effective", "agent:triage", "--at", str(story)))["tools"]
        assert served != recomputed

    run = toolcat("audit", "replay")
    assert run.code == 5, f"expected exit 5, got {run.code}\nstdout: {run.stdout}\nstderr: {run.stderr}"
    result = run.json
    assert result["matches"] is False
    assert result["position"] == story
    assert result["fingerprint"] != result["live_fingerprint"]


def test_the_fast_fingerprint_of_the_materialized_sets_equals_the_deep_one_recomputed_from_history(
        story: int, toolcat: Any) -> None:
    # given the story's read model; when fingerprinted from its materialized tables and, --deep, from history
    fast = ok(toolcat("audit", "fingerprint"))
    deep = ok(toolcat("audit", "fingerprint", "--deep"))
    # then both say the same, and a replay compared deeply matches too
    assert fast == deep and fast["position"] == story
    assert replayed(toolcat("audit", "replay", "--deep"))["matches"] is True
