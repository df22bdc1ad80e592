"""`toolcat workload`: the seeded benchmark history, written into an empty home with exactly the number of
events asked for, that `rebuild` then projects with the effective sets settled."""
from __future__ import annotations

from pathlib import Path

from tests.support import error_of, ok, toolcat_environ, toolcat_in_process


def test_given_an_empty_home_when_a_workload_is_asked_for_then_exactly_that_many_events_are_written(
        tmp_path: Path) -> None:
    home = tmp_path / "bench"
    with toolcat_environ("tester"):
        # when
        written = ok(toolcat_in_process(home, "workload", "--events", "1234", "--json"))
        # then: exactly the count, as the store holds it, and a rebuild projects all of it
        assert written["events"] == written["position"] == 1234
        rebuilt = ok(toolcat_in_process(home, "audit", "replay", "--json"))
        assert rebuilt["position"] == 1234 and rebuilt["matches"]


def test_given_a_home_with_events_when_a_workload_is_asked_for_then_it_is_refused_and_nothing_is_written(
        tmp_path: Path) -> None:
    home = tmp_path / "bench"
    with toolcat_environ("tester"):
        ok(toolcat_in_process(home, "workload", "--events", "200", "--json"))
        # when
        again = toolcat_in_process(home, "workload", "--events", "200", "--json")
        # then
        assert again.code == 2 and error_of(again)["code"] == "usage"
        assert ok(toolcat_in_process(home, "audit", "replay", "--json"))["position"] == 200


def test_given_too_few_events_when_a_workload_is_asked_for_then_it_is_refused_and_no_home_is_made(
        tmp_path: Path) -> None:
    home = tmp_path / "bench"
    with toolcat_environ("tester"):
        refused = toolcat_in_process(home, "workload", "--events", "20", "--json")
    assert refused.code == 2 and "at least" in error_of(refused)["message"]
    assert not home.exists()
