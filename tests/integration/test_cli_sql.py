"""`toolcat sql` as the analyst meets it (issues 14 and 17): refusals and SQL errors with codes of their own,
JSON columns as JSON values, --json and --format that cannot both be obeyed refused, and the statement
timeout and row limit taken from the settings."""
from __future__ import annotations

import csv
import io
import json
import resource
from pathlib import Path
from typing import Any

import pytest

from tests.support import Run, ok, toolcat_in_process

SECRET = "toolcat-secret-4711"


def failed(run: Run, exit_code: int, code: str) -> dict[str, Any]:
    assert run.code == exit_code, f"exit {run.code}\nstdout: {run.stdout}\nstderr: {run.stderr}"
    assert run.stdout == ""
    error = run.error
    assert error["code"] == code, error
    return error


def test_sql_that_would_write_or_read_a_file_is_refused(story: int, cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "copied.csv"
    error = failed(cli("sql", f"COPY (SELECT * FROM events) TO '{out}'"), 3, "sql_refused")
    assert "COPY reads or writes files" in error["message"] and error["details"] == {"statement": "COPY"}
    assert not out.exists()
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    for query in (f"SELECT content FROM read_text('{secret}')", f"SELECT * FROM '{secret}'"):
        run = cli("sql", query)
        failed(run, 3, "sql_refused")
        assert SECRET not in run.stderr
    error = failed(cli("sql", "SELECT 1; SELECT 2"), 3, "sql_refused")
    assert "one statement at a time" in error["message"]


def test_sql_errors_have_a_code_of_their_own(story: int, cli: Any) -> None:
    error = failed(cli("sql", "SELECT nosuch FROM events"), 2, "sql_error")
    assert "nosuch" in error["message"]
    failed(cli("sql", "SELEC 1"), 2, "sql_error")


def test_json_columns_are_answered_as_json_values(story: int, cli: Any, home: Path) -> None:
    policy = ok(cli("sql", "SELECT data FROM events WHERE type = 'Policy.Recorded'"))[0]["data"]
    assert policy["policy"]["name"] == "tyrum"
    documents = ok(cli("sql", "SELECT subject, tools FROM effective_documents ORDER BY subject LIMIT 1"))
    assert isinstance(documents[0]["tools"], list) and {"tool_id", "provenance"} <= set(documents[0]["tools"][0])
    as_format = toolcat_in_process(home, "sql", "SELECT data FROM events WHERE position = 1", "--format", "json")
    assert json.loads(as_format.stdout)[0]["data"] == policy
    as_csv = toolcat_in_process(home, "sql", "SELECT position, data FROM events WHERE position = 1",
                                "--format", "csv")
    (row,) = csv.DictReader(io.StringIO(as_csv.stdout))
    assert row["position"] == "1" and json.loads(row["data"]) == policy


@pytest.mark.parametrize("other", ["csv", "table"])
def test_json_with_another_format_is_refused_not_ignored(story: int, cli: Any, other: str) -> None:
    error = failed(cli("sql", "SELECT 1 AS one", "--format", other), 2, "usage")
    assert f"--format {other}" in error["message"] and "--json" in error["message"]
    assert ok(cli("sql", "SELECT 1 AS one", "--format", "json")) == [{"one": 1}]


def test_the_timeout_comes_from_the_settings(story: int, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLCAT_SQL_TIMEOUT_SECONDS", "0.3")
    error = failed(cli("sql", "SELECT count(*) FROM range(100000000000) t(i) WHERE i % 7 = 3"), 3, "sql_timeout")
    assert error["details"] == {"timeout_seconds": 0.3}
    assert ok(cli("sql", "SELECT count(*) AS n FROM events")) == [{"n": story}]


# A hang guard, not a timing assertion: in the caller's process this query ran about two minutes (DuckDB
# reaches its interrupt check only when the call ends); a worker is killed a second after the timeout.
@pytest.mark.timeout(60)
def test_a_query_deaf_to_interrupts_is_stopped_at_the_timeout(story: int, cli: Any,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a statement timeout of half a second, and one scalar call that runs for minutes without ever
    # reaching DuckDB's interrupt check (an edit distance of two strings of 300,000 characters)
    monkeypatch.setenv("TOOLCAT_SQL_TIMEOUT_SECONDS", "0.5")
    query = "SELECT levenshtein(repeat('a', 300000), repeat('b', 300000)) AS d"
    # When an analyst runs it, then it ends as sql_timeout (its worker process is killed)
    error = failed(cli("sql", query), 3, "sql_timeout")
    assert error["details"] == {"timeout_seconds": 0.5}
    # and the next query is answered as usual
    assert ok(cli("sql", "SELECT count(*) AS n FROM events")) == [{"n": story}]


def test_a_query_that_builds_a_huge_value_is_refused_without_growing_the_caller(
        story: int, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given user SQL capped at 2 GiB of address space, and a query whose one value is a list of 200 million
    # integers (1.6 GB): DuckDB's memory_limit does not see it, and it ran 253 s to 14.5 GB in the server
    monkeypatch.setenv("TOOLCAT_SQL_MEMORY_BYTES", str(2**31))
    monkeypatch.setenv("TOOLCAT_SQL_TIMEOUT_SECONDS", "5")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    # When it runs, then it is refused for its memory
    error = failed(cli("sql", "SELECT len(range(200000000)) AS n"), 3, "sql_refused")
    assert "more memory than a query may take" in error["message"]
    # and the process that asked (here the test's own) never held the list
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 < before + 512 * 2**20


def test_the_row_limit_comes_from_the_settings_and_is_told(story: int, cli: Any, home: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLCAT_SQL_ROW_LIMIT", "2")
    query = "SELECT position FROM events ORDER BY position"
    run = cli("sql", query)
    assert ok(run) == [{"position": 1}, {"position": 2}]
    assert "only the first 2 rows are shown (TOOLCAT_SQL_ROW_LIMIT)" in run.stderr
    table = toolcat_in_process(home, "sql", query)
    assert table.code == 0 and "TOOLCAT_SQL_ROW_LIMIT" in table.stderr
    assert [line.split()[1] for line in table.stdout.splitlines() if line.startswith("│")] == ["1", "2"]
    whole = cli("sql", "SELECT position FROM events WHERE position <= 2")
    assert len(ok(whole)) == 2 and whole.stderr == ""


# When did an agent lose the use of a tool it could call, and what did it come to? (docs/analysts.md,
# "Questions over history"): a version of effective_history that was enabled, joined with the version
# that follows it.
LOST = """
SELECT h.subject_kind || ':' || h.subject AS subject, h.tool_id, h.valid_to AS lost_at,
       coalesce(n.exposure, 'not in its set') AS since_then, e.type AS event
FROM effective_history h
LEFT JOIN effective_history n ON n.subject_kind = h.subject_kind AND n.subject = h.subject
     AND n.tool_key = h.tool_key AND n.valid_from = h.valid_to
JOIN events e ON e.position = h.valid_to
WHERE h.subject_kind = 'agent' AND h.exposure = 'enabled' AND h.valid_to IS NOT NULL
  AND n.exposure IS DISTINCT FROM 'enabled'
ORDER BY lost_at, subject, h.tool_id
"""


def test_an_analyst_joins_effective_history_to_find_when_agents_lost_a_tool(story: int, cli: Any) -> None:
    # given the example story; when an analyst asks in SQL when agents lost a tool they could call, and why
    lost = ok(cli("sql", LOST))
    # then the revoke and the allowlist of the story are among the answers
    assert {(r["subject"], r["tool_id"], r["since_then"], r["event"]) for r in lost} >= {
        ("agent:triage", "websearch", "not in its set", "Grants.Revoked"),
        ("agent:triage", "tool.desktop.act", "disabled_by_agent_allowlist", "Agent.AllowlistSet")}
    # and the retirement of mcp.memory.search is not: triage's allowlist was migrated to memory.search first
    assert [r for r in lost if r["tool_id"] == "memory.search"] == []
    # and each is what `who-can --at` answers just before and at that position
    for row in lost:
        def exposure(at: int) -> str:
            found = ok(cli("who-can", row["tool_id"], "--at", str(at)))["subjects"]
            return next((s["exposure"] for s in found if s["subject"] == row["subject"]), "not in its set")

        assert exposure(row["lost_at"] - 1) == "enabled", row
        assert exposure(row["lost_at"]) == row["since_then"], row


def test_an_analyst_asks_one_agent_s_history_of_the_table_macro_and_gets_its_share_of_the_view(
        story: int, cli: Any) -> None:
    # given the example story; when an analyst asks for one agent's versions through the table macro
    share = ok(cli("sql", "SELECT * FROM effective_history_of('agent', 'triage') ORDER BY ALL"))
    # then they are exactly that agent's rows of the view
    view = ok(cli("sql", "SELECT * FROM effective_history WHERE subject_kind = 'agent' AND subject = 'triage' "
                         "ORDER BY ALL"))
    assert share == view and len(share) > 5
