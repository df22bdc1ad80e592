"""`toolcat watch SUBJECT`: a subject's effective-set changes, read from the changelog topic."""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from consumers.kafka_io import Consumer


def diff(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Added, removed and changed rows between two versions of a subject's set."""
    old = {row["tool_id"]: row for row in before}
    new = {row["tool_id"]: row for row in after}
    changes = [{"change": "added", "tool_id": t, "row": new[t]} for t in sorted(new.keys() - old.keys())]
    changes += [{"change": "removed", "tool_id": t, "row": old[t]} for t in sorted(old.keys() - new.keys())]
    for tool_id in sorted(old.keys() & new.keys()):
        if old[tool_id] == new[tool_id]:  # most rows: one comparison in C (a server's watch diffs in its event loop)
            continue
        fields = {k: [old[tool_id][k], new[tool_id][k]] for k in new[tool_id] if old[tool_id].get(k) != new[tool_id][k]}
        if fields:
            changes.append({"change": "changed", "tool_id": tool_id, "fields": fields})
    return changes


def watch(consumer: Consumer, topic: str, subject: str, on_change: Callable[[int, list[dict[str, Any]]], None],
          idle_timeout: float | None = None, should_stop: Callable[[], bool] = lambda: False,
          from_position: int = 0, on_caught_up: Callable[[int], None] = lambda position: None) -> None:
    """Follow the compacted topic from its start; report every change of `subject`'s set at a position
    after `from_position`, the first version always (an empty set too: no changes, yet published).
    Earlier versions still set the baseline the first reported change is a diff from: each message is a
    whole set, so a restart resumes where it stopped without replaying. `on_caught_up(position)` is told
    once the topic was read to its end past a caught-up marker (consumers/changelog.py): the set reported so far is complete."""
    from consumers.changelog import CAUGHT_UP_KEY
    caught_up, marked = False, None
    consumer.assign(topic, consumer.partitions(topic) or [0], {})
    current: list[dict[str, Any]] | None = None  # None: no version seen yet
    last_seen = time.monotonic()
    while not should_stop():
        messages = consumer.poll(200)
        if not messages and not caught_up and marked is not None:  # read to the end, past a marker
            caught_up = True
            on_caught_up(max(marked, from_position))
        if messages:
            last_seen = time.monotonic()
        elif idle_timeout is not None and time.monotonic() - last_seen > idle_timeout:
            return
        for message in messages:
            key = None if message.key is None else message.key.decode()
            if key == CAUGHT_UP_KEY:
                marked = json.loads(message.value)["position"]
            if key != subject:
                continue
            document = json.loads(message.value)
            changes = diff(current or [], document["tools"])
            if (changes or current is None) and document["position"] > from_position:
                on_change(document["position"], changes)
            current = document["tools"]
