"""A subject's set on the console comes in pages of ROWS_PER_PAGE rows (infra/http/console_subjects.py)."""
from __future__ import annotations

import pytest

from domain.errors import UsageError
from infra.http.console_subjects import ROWS_PER_PAGE, page_of


def test_a_large_set_is_shown_page_by_page_with_where_each_page_stands() -> None:
    # given a set of two and a half pages' worth of tools
    tools = [{"tool_id": f"t{i}"} for i in range(2 * ROWS_PER_PAGE + 50)]
    # when the last page is asked for, then it holds the last 50, numbered as a person counts them
    last = page_of(tools, 3)
    assert [t["tool_id"] for t in last["rows"]] == [f"t{i}" for i in range(2 * ROWS_PER_PAGE, len(tools))]
    assert (last["first"], last["last"], last["total"], last["pages"]) == (2 * ROWS_PER_PAGE + 1, len(tools),
                                                                          len(tools), 3)
    # and a page past the end is refused with the number of pages
    with pytest.raises(UsageError, match="page 4 is outside 1 to 3"):
        page_of(tools, 4)


def test_an_empty_set_is_one_empty_page() -> None:
    assert page_of([], 1) | {"rows": None} == {"rows": None, "page": 1, "pages": 1, "first": 1, "last": 0,
                                                "total": 0}
