"""A command's answer as both entry points give it: the `Reply` (one JSON document for machines, a readable
form in blocks of text and tables for people), its JSON form (what a server sends the command line that
asked), and a write's answer. How a reply is printed is the command line's (infra/cli/output.py); how it is
sent, the server's (infra/http/answers.py)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the command line imports this module before it knows whether a write runs
    from domain.catalog import WriteResult


@dataclass(frozen=True)
class Table:
    title: str | None
    columns: Sequence[str]
    rows: Sequence[Sequence[Any]]


# The command line's client asks a server for the whole reply (the readable form too), so it prints what
# it would have printed.
REPLY_MEDIA_TYPE = "application/vnd.toolcat.reply+json"

Block = str | Table
AS_JSON = None  # a `human` of None: the readable form is the JSON document itself


@dataclass
class Reply:
    """A command's answer. `document` is the --json answer (None: the command has no JSON form and shows
    `human` either way); `human` the readable form, in blocks of text and tables; `notes` go to stderr
    (e.g. that a row limit cut the answer)."""
    document: Any
    human: list[Block] | None = field(default_factory=list)
    exit_code: int = 0
    notes: list[str] = field(default_factory=list)


def reply_as_json(reply: Reply) -> dict[str, Any]:
    """A reply as one JSON document (a server's answer to the command line that sent it the command)."""
    human = None if reply.human is AS_JSON else [
        block if isinstance(block, str) else {"title": block.title, "columns": list(block.columns),
                                               "rows": [list(row) for row in block.rows]}
        for block in reply.human]
    return {"document": reply.document, "human": human, "exit_code": reply.exit_code}


def reply_from_json(answer: dict[str, Any]) -> Reply:
    human = answer["human"]
    blocks = None if human is None else [b if isinstance(b, str) else Table(b["title"], b["columns"], b["rows"])
                                         for b in human]
    return Reply(answer["document"], blocks, answer["exit_code"])


# -- writes ---------------------------------------------------------------------------------------------
EventsOfKey = Callable[[str], list[dict[str, Any]]]


def write_document(result: WriteResult, events_of_key: EventsOfKey) -> dict[str, Any]:
    """A write's answer; a replayed idempotency key answers with the first run's events (`events_of_key`
    reads them from the read model)."""
    if result.replayed_key is None:
        return {"position": result.position, "events": [e.model_dump() for e in result.events]}
    events = events_of_key(result.replayed_key)
    return {"position": max((e["position"] for e in events), default=None), "events": events}


def describe_write(document: dict[str, Any]) -> str:
    events = document["events"]
    if not events:
        return "Nothing to record: the catalog already says so."
    listed = ", ".join(f"{e['type']} @{e['position']}" for e in events)
    return f"Recorded {len(events)} event(s), up to position {document['position']}: {listed}"


def write_reply(result: WriteResult, events_of_key: EventsOfKey) -> Reply:
    document = write_document(result, events_of_key)
    return Reply(document, [describe_write(document)])
