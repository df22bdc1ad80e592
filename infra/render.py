"""Output: one JSON document for machines, a readable sentence or table for people."""
from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from domain.errors import ToolcatError


def print_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=False, default=str) + "\n")


def print_text(text: str) -> None:
    sys.stdout.write(text.rstrip("\n") + "\n")


def print_table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    table = Table(title=title, show_lines=False, header_style="bold")
    for index, column in enumerate(columns):
        table.add_column(column, overflow="fold", no_wrap=index == 0)
    for row in rows:
        table.add_row(*("" if value is None else str(value) for value in row))
    console = Console(soft_wrap=False)
    if not console.is_terminal:
        console = Console(soft_wrap=False, width=160)  # pipes and logs: no narrow default wrapping
    console.print(table)


def print_error(error: ToolcatError, as_json: bool) -> None:
    if as_json:
        sys.stderr.write(json.dumps(error.as_document(), default=str) + "\n")
    else:
        sys.stderr.write(f"toolcat: error: {error.message} [{error.code}]\n")


def describe_write(document: dict[str, Any]) -> str:
    events = document["events"]
    if not events:
        return "Nothing to record: the catalog already says so."
    listed = ", ".join(f"{e['type']} @{e['position']}" for e in events)
    return f"Recorded {len(events)} event(s), up to position {document['position']}: {listed}"
