"""The readable table every command prints: values are data, never markup, and their control and bidi
characters show as escapes (`\u202e`, `\n`); a value is wrapped only between words, and a word too wide
for its column is cut with an ellipsis, never broken silently.

Columns get their width in two rounds of water-filling. First every column gets room for its longest
word where the width allows (else the widest words are cut, equally, except in the first column, which
names the row); then what is left goes to the columns whose values are longer than that, so short
columns stay whole and long text wraps.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from domain.grammar import visible
from infra.reply import Table

if TYPE_CHECKING:  # rich is imported when a table is printed, not by every command that might print one
    from rich.table import Table as RichTable

MIN_WIDTH = 6  # a cut column still shows a few characters and its ellipsis


def cell_text(value: Any) -> str:
    """A value as a table cell (or a sentence) shows it: hidden characters escaped, newlines included."""
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return visible(json.dumps(value, ensure_ascii=False, default=str))
    return visible(str(value))


def fitted_table(table: Table, width: int | None) -> tuple[RichTable, int]:
    """The table laid out for a terminal `width` (None: as wide as its values), and the width it takes."""
    from rich.table import Table as RichTable
    from rich.text import Text
    names = [cell_text(name) for name in table.columns]
    texts = [[cell_text(row[index]) for row in table.rows] for index in range(len(table.columns))]
    natural = [max(map(_widest_line, [name, *column])) for name, column in zip(names, texts)]
    words = [max(map(_widest_word, [name, *column])) for name, column in zip(names, texts)]
    frame = 3 * len(table.columns) + 1  # borders and one space of padding either side of each column
    widths = natural if width is None else column_widths(natural, words, width - frame)
    rich = RichTable(title=None if table.title is None else Text(cell_text(table.title)), show_lines=False,
                     header_style="bold")
    for name, column_width in zip(names, widths):
        rich.add_column(Text(name), width=column_width, overflow="ellipsis")
    for row in zip(*texts):
        rich.add_row(*(Text(text) for text in row))
    return rich, sum(widths) + frame


def column_widths(natural: list[int], words: list[int], available: int) -> list[int]:
    """Each column's width within `available` characters (see the module's docstring)."""
    if sum(words) <= available:
        return _fill(words, natural, available)
    floors = [min(need, MIN_WIDTH) for need in natural]
    if floors:  # the first column names the row (an ID, a name, a position): kept whole up to half the width
        floors[0] = max(floors[0], min(words[0], available // 2))
    return _fill(floors, words, available)


def _fill(lower: list[int], upper: list[int], available: int) -> list[int]:
    """Widths between `lower` and `upper` summing to at most `available` (when the lower bounds allow):
    every column below a common level is raised to it, the highest level that fits."""
    def widths(level: int) -> list[int]:
        return [max(low, min(high, level)) for low, high in zip(lower, upper)]
    low, high = 0, max(upper, default=0)
    while low < high:
        level = (low + high + 1) // 2
        low, high = (level, high) if sum(widths(level)) <= available else (low, level - 1)
    chosen = widths(low)
    spare = available - sum(chosen)  # the level's rounding: one more character each, left to right
    for index, (now, high) in enumerate(zip(chosen, upper)):
        if spare > 0 and now < high:
            chosen[index], spare = now + 1, spare - 1
    return chosen


def _widest_line(text: str) -> int:
    from rich.cells import cell_len
    return max((cell_len(line) for line in text.splitlines()), default=0)


def _widest_word(text: str) -> int:
    from rich.cells import cell_len
    return max((cell_len(word) for word in text.split()), default=0)
