"""The readable tables every command prints (issue 14): on an 80-column terminal no value is broken inside
a word, a word too wide is cut with an ellipsis, cell text is never read as markup; to a pipe, values are
printed whole. The 80-column rendering is compared with a checked-in one."""
from __future__ import annotations

import io
import re
from pathlib import Path

from rich.cells import cell_len
from rich.console import Console

from infra.cli.output import print_table
from infra.cli.tables import Table, cell_text, column_widths

EXPECTED = Path(__file__).parent / "expected" / "sql_table_80_columns.txt"
# `toolcat sql "SELECT position, type, actor, reason, data FROM events …"` on the demo, and two hostile rows.
EVENTS = Table(None, ["position", "type", "actor", "reason", "data"], [
    [34, "Tool.Registered", "root", "ARCH-21: memory helpers move to the memory family",
     {"canonical_id": "memory.search", "family": "memory", "group": "memory", "tier": "default"}],
    [154, "Tool.Renamed", "root", "verb aligned with the ticket API",
     {"old_id": "acme.ticket.create", "new_id": "acme.ticket.open", "source": None}],
    [160, "Agents.AllowlistSet", "operator@example.com", "[red]BETA[/red] search [internal] only",
     {"agent": "triage", "patterns": ["^*(\\.*)*$", "mcp.memory.*"]}],
    [165, "Grants.Revoked", "root", None, {"subject": "agent:triage", "grant_id": "websearch"}],
])


def terminal(width: int) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=width, force_terminal=True, color_system=None, soft_wrap=False), out


def rendered_words(text: str) -> list[str]:
    """The words in the table's cells (borders and headers' rules dropped)."""
    cells = re.split(r"[│┃]", text)
    return [word for cell in cells for word in cell.split() if not set(word) <= set("━─┏┓┗┛┡┩└┘┳┻╇┴")]


def test_at_80_columns_values_wrap_between_words_and_cut_words_show_an_ellipsis() -> None:
    console, out = terminal(80)
    print_table(EVENTS, console)
    text = out.getvalue()
    assert text == EXPECTED.read_text(encoding="utf-8"), "\n" + text
    assert all(cell_len(line) <= 80 for line in text.splitlines())
    values = [cell_text(v) for row in EVENTS.rows for v in row] + list(EVENTS.columns)
    whole = {word for value in values for word in value.split()}
    for word in rendered_words(text):
        if word.endswith("…"):
            assert any(w.startswith(word[:-1]) and w != word[:-1] for w in whole), word
        else:
            assert word in whole, word
    # Data is never markup: the brackets print as they were recorded.
    assert "[red]BETA" in text and "[internal]" in text


def test_to_a_pipe_every_value_is_printed_whole_on_one_line() -> None:
    out = io.StringIO()
    print_table(EVENTS, Console(file=out, force_terminal=False, soft_wrap=False))
    text = out.getvalue()
    for row in EVENTS.rows:
        line = next(line for line in text.splitlines() if f"│ {row[0]} " in line)
        assert str(row[3] or "") in line
    assert '"patterns": ["^*(\\\\.*)*$", "mcp.memory.*"]' in text and "[red]BETA[/red]" in text


def test_short_columns_stay_whole_and_the_long_ones_share_what_is_left() -> None:
    # Natural widths 8, 15, 60 and longest words 8, 15, 12, in 60 characters.
    assert column_widths([8, 15, 60], [8, 15, 12], 60) == [8, 15, 37]
    # Even the longest words do not fit: the widest are cut to a common width, the narrow stay whole.
    assert column_widths([8, 40, 50], [8, 40, 50], 40) == [8, 16, 16]
    # ... but the first column, which names the row, keeps its words whole up to half the width.
    assert column_widths([30, 40, 50], [30, 40, 50], 60) == [30, 15, 15]
    assert column_widths([50, 40], [50, 40], 60) == [30, 30]
    assert column_widths([3, 4], [3, 4], 80) == [3, 4]
