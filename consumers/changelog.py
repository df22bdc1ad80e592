"""The per-subject changelog: each changed subject's whole effective set to a compacted topic."""
from __future__ import annotations

import json
from typing import Any

import duckdb

from consumers.kafka_io import Producer
from projections.tracking import read_tracking
from projections.queries import current_effective
from projections.rows import run

CHANGELOG_SCHEMA = "toolcat.effective/v1"
# The caught-up marker (docs/services.md): published after every drain, under a key no subject can have
# (subjects are `unit:` or `agent:`). A subscriber that has read up to a marker holds every subject's set
# as of the marker's position: its copy is complete, and an absent subject does not exist.
CAUGHT_UP_KEY = "toolcat:caught-up"


def caught_up_document(position: int) -> dict[str, Any]:
    return {"schema": CHANGELOG_SCHEMA, "caught_up": True, "position": position}


def subject_document(con: duckdb.DuckDBPyConnection, subject: str, position: int) -> dict[str, Any]:
    return {"schema": CHANGELOG_SCHEMA, "subject": subject, "position": position,
            "tools": current_effective(con, subject)}


def publish_changes(con: duckdb.DuckDBPyConnection, producer: Producer, topic: str) -> int:
    """Drain the outbox: publish, wait for the broker, then forget what was published."""
    pending = run(con, "SELECT subject, position FROM changelog_outbox ORDER BY subject")
    if not pending:
        return 0
    position = read_tracking(con).position
    # Each subject's final set, with the position of the last event that changed it.
    messages = [(subject.encode(), json.dumps(subject_document(con, subject, changed_at)).encode())
                for subject, changed_at in pending]
    messages.append((CAUGHT_UP_KEY.encode(), json.dumps(caught_up_document(position)).encode()))
    producer.publish(topic, messages)
    run(con, "DELETE FROM changelog_outbox WHERE position <= $p", {"p": position})
    return len(pending)
