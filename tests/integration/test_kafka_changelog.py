"""The per-subject changelog: with Kafka configured, `toolcat project` publishes every subject whose
effective set changed to the compacted effective-tools topic (key = subject, value = the whole set and
the position it reflects), and `toolcat watch` turns those versions into added/removed/changed rows.
"""
from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

from consumers.watch import diff
from infra.settings import Settings
from tests.integration.kafka_support import (lines_before, on_both_kafka_clients, popen_toolcat, read_topic,
                                             stop_process, store_head, toolcat)
from tests.support import error_of, ok, run_in_process

BEFORE_REVOKE, FROM_REVOKE = lines_before(("grant", "revoke"))
REVOKE = FROM_REVOKE[0]
SUBJECT, REVOKED_TOOL = REVOKE[2], REVOKE[3]  # grant revoke agent:triage websearch
TOOL_FIELDS = {"tool_id", "namespace", "description", "provenance", "inherited_from", "exposure"}


def documents_at(settings: Settings, position: int | None, subject: str) -> list[Any]:
    """The changelog read until `subject` has a version at `position` (None: any); returns every message."""
    def reached(messages: list[Any]) -> bool:
        return any(m.key == subject.encode() and position in (None, json.loads(m.value)["position"])
                   for m in messages)
    return read_topic(settings, settings.kafka_effective_topic, reached,
                      what=f"a version of {subject} at position {position}")


def outbox(home: Path) -> list[Any]:
    import duckdb
    con = duckdb.connect(str(home / "catalog.duckdb"), read_only=True)
    try:
        return con.execute("SELECT subject, position FROM changelog_outbox").fetchall()
    finally:
        con.close()


@on_both_kafka_clients
def test_project_publishes_changed_subjects_and_watch_reports_a_revoke(kafka_settings: Settings) -> None:
    home = kafka_settings.home
    assert REVOKE[:2] == ["grant", "revoke"] and SUBJECT.startswith("agent:")
    # Given the story up to the revoke, projected with Kafka configured
    run_in_process(home, BEFORE_REVOKE)
    first = ok(toolcat("project", home=home, settings=kafka_settings))["position"]
    assert first == store_head(kafka_settings)

    # Then every subject's final set is on the changelog, once, keyed by subject, at the position of the
    # last event that changed it
    # (the caught-up marker aside: docs/services.md)
    messages = [m for m in documents_at(kafka_settings, None, SUBJECT) if m.key != b"toolcat:caught-up"]
    latest = {m.key.decode(): json.loads(m.value) for m in messages}
    assert {"unit:eng", "unit:support", SUBJECT} <= set(latest)
    assert len(messages) == len(latest)
    for subject, document in latest.items():
        assert document["schema"] == "toolcat.effective/v1"
        assert document["subject"] == subject and 0 < document["position"] <= first
        assert document["tools"], f"{subject} has an empty set"
        for tool in document["tools"]:
            assert set(tool) == TOOL_FIELDS
        assert [t["tool_id"] for t in document["tools"]] == sorted(t["tool_id"] for t in document["tools"])
    before = {t["tool_id"]: t for t in latest[SUBJECT]["tools"]}
    assert REVOKED_TOOL in before, f"{SUBJECT} should see {REVOKED_TOOL} before the revoke"
    assert outbox(home) == [], "published subjects leave the outbox"

    # and `toolcat watch --json`, started before the revoke, prints the set as first seen at once
    watcher = popen_toolcat("watch", SUBJECT, "--json", home=home, settings=kafka_settings,
                            stderr_path=home.parent / "watch.stderr")
    lines = line_reader(watcher)
    try:
        seen = json.loads(lines.get(timeout=60))
        assert (seen["subject"], seen["position"]) == (SUBJECT, latest[SUBJECT]["position"])
        assert {c["change"] for c in seen["changes"]} == {"added"}
        assert {c["tool_id"] for c in seen["changes"]} == set(before)
        # then that its copy is complete: the changelog's caught-up marker was read
        assert json.loads(lines.get(timeout=60)) == {"subject": SUBJECT, "position": first, "caught_up": True}

        # When the grant is revoked and the read model projected again, while the watch runs
        run_in_process(home, [REVOKE])
        second = ok(toolcat("project", home=home, settings=kafka_settings))["position"]
        assert second == first + 1

        # Then the watch prints the revoke as it happens, one JSON line
        update = json.loads(lines.get(timeout=60))
    finally:
        stop_process(watcher)
    assert update["position"] == second
    revoked = [c for c in update["changes"] if c["tool_id"] == REVOKED_TOOL]
    assert revoked and revoked[0]["change"] in ("removed", "changed"), update["changes"]

    # and only the changed subject was published again, without (or with a changed) revoked tool
    messages = documents_at(kafka_settings, second, SUBJECT)
    republished = {m.key.decode() for m in messages if json.loads(m.value)["position"] == second
                   and m.key != b"toolcat:caught-up"}
    assert republished == {SUBJECT}
    assert outbox(home) == []

    # and a watch restarted from the last position it printed resumes: the revoke only, not a replay
    resumed = toolcat("watch", SUBJECT, "--from-position", str(first), "--timeout", "3", home=home,
                      settings=kafka_settings)
    assert resumed.code == 0, resumed.stderr
    assert [json.loads(line) for line in resumed.stdout.splitlines()][0]["position"] == second
    # and says its copy is complete at the marker the revoke's projection published
    assert json.loads(resumed.stdout.splitlines()[-1]) == {"subject": SUBJECT, "position": second,
                                                           "caught_up": True}
    assert len(resumed.stdout.splitlines()) == 2


def line_reader(process: subprocess.Popen[str]) -> queue.Queue[str]:
    """The lines `process` prints, as they come (a thread reads them; the test waits with a timeout)."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in process.stdout:  # type: ignore[union-attr]
            lines.put(line)
    threading.Thread(target=read, daemon=True).start()
    return lines


def test_watch_refuses_a_subject_the_catalog_does_not_know(kafka_settings: Settings) -> None:
    # given a catalog published to Kafka
    run_in_process(kafka_settings.home, BEFORE_REVOKE)
    ok(toolcat("project", home=kafka_settings.home, settings=kafka_settings))
    # when a subject it never had is watched, then it is refused, not watched in silence
    watched = toolcat("watch", "agent:nobody", "--timeout", "2", home=kafka_settings.home, settings=kafka_settings)
    assert watched.code == 3
    assert error_of(watched)["code"] == "unknown_subject"


# -- consumers.watch.diff ----------------------------------------------------------------------------

def row(tool_id: str, **fields: Any) -> dict[str, Any]:
    base = {"tool_id": tool_id, "namespace": tool_id.split(".")[0], "description": f"{tool_id} tool",
            "provenance": "grant", "inherited_from": None, "exposure": "enabled"}
    return base | fields


def test_diff_reports_added_removed_and_changed_rows() -> None:
    before = [row("bash"), row("read"), row("websearch")]
    after = [row("bash", exposure="disabled_by_agent_allowlist"), row("glob"), row("read")]
    changes = diff(before, after)
    assert changes == [
        {"change": "added", "tool_id": "glob", "row": row("glob")},
        {"change": "removed", "tool_id": "websearch", "row": row("websearch")},
        {"change": "changed", "tool_id": "bash",
         "fields": {"exposure": ["enabled", "disabled_by_agent_allowlist"]}},
    ]


def test_diff_of_equal_sets_is_empty_and_from_nothing_all_added() -> None:
    rows = [row("read"), row("grep", provenance="inherited", inherited_from="unit:eng")]
    assert diff(rows, [dict(r) for r in reversed(rows)]) == []
    assert [(c["change"], c["tool_id"]) for c in diff([], rows)] == [("added", "grep"), ("added", "read")]
    assert [(c["change"], c["tool_id"]) for c in diff(rows, [])] == [("removed", "grep"), ("removed", "read")]
    changed = diff([row("read")], [row("read", provenance="inherited", inherited_from="unit:eng")])
    assert changed == [{"change": "changed", "tool_id": "read",
                        "fields": {"provenance": ["grant", "inherited"], "inherited_from": [None, "unit:eng"]}}]


def test_an_empty_set_is_published_and_the_changelog_marks_caught_up(kafka_settings: Settings) -> None:
    home = kafka_settings.home
    # Given a unit with no grants and an agent in it: both have an empty effective set
    ok(toolcat("unit", "create", "empty", home=home, settings=kafka_settings))
    ok(toolcat("agent", "create", "idle", "--unit", "empty", home=home, settings=kafka_settings))

    # When the read model is projected with Kafka configured
    head = ok(toolcat("project", home=home, settings=kafka_settings))["position"]

    # Then both subjects are on the changelog as "tools": [], followed by the caught-up marker
    messages = read_topic(kafka_settings, kafka_settings.kafka_effective_topic,
                          lambda ms: any(m.key == b"toolcat:caught-up" for m in ms), what="the caught-up marker")
    latest = {m.key.decode(): json.loads(m.value) for m in messages}
    assert latest["agent:idle"]["tools"] == [] and latest["unit:empty"]["tools"] == []
    assert latest["agent:idle"]["position"] == head
    assert messages[-1].key == b"toolcat:caught-up"
    assert json.loads(messages[-1].value) == {"schema": "toolcat.effective/v1", "caught_up": True, "position": head}

    # and `watch --json` prints the empty first version, then that its copy is complete
    run = toolcat("watch", "agent:idle", "--timeout", "3", home=home, settings=kafka_settings)
    assert run.code == 0, run.stderr
    watched = [m for m in (json.loads(line) for line in run.stdout.splitlines() if line.startswith("{"))]
    assert watched == [{"subject": "agent:idle", "position": head, "changes": []},
                       {"subject": "agent:idle", "position": head, "caught_up": True}]


def test_watch_help_says_what_json_prints() -> None:
    from tests.support import call_toolcat, toolcat_env
    shown = call_toolcat("watch", "--help", env=toolcat_env("tester"), json_output=False)
    assert shown.code == 0
    assert "exactly one JSON document" not in shown.stdout and "one JSON line per change" in " ".join(shown.stdout.split())
