"""The console's natural order (projections/console.py): names sorted as people count."""
from __future__ import annotations

from projections.console import natural_key


def test_digit_runs_sort_as_numbers_and_text_as_text() -> None:
    names = ["tool_10", "tool_2", "ns10.tool_1", "tool_1", "ns2.tool_10", "ns2.tool_9", "tool", "tool_1b", "Tool_3"]
    assert sorted(names, key=natural_key) == [
        "Tool_3", "ns2.tool_9", "ns2.tool_10", "ns10.tool_1", "tool", "tool_1", "tool_1b", "tool_2", "tool_10"]


def test_leading_zeros_and_long_numbers_keep_their_value() -> None:
    assert sorted(["v007", "v10", "v8", "v123456789012345678901234"], key=natural_key) == [
        "v007", "v8", "v10", "v123456789012345678901234"]
