"""Grants and bindings with --effective-at: "as known at T1, effective at T2"."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from domain.base import Meta
from domain.errors import UsageError
from domain.naming import preset
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from projections.catchup import catch_up
from projections.effective.reads import effective_rows
from projections.projector import Projector

META = Meta(actor="tester")


def seen(con: Any, at: int, effective_at: str | None) -> list[tuple[str, str]]:
    return [(r["tool_id"], r["provenance"]) for r in effective_rows(con, [("agent", "ada")], at, effective_at)]


@pytest.fixture
def story(tmp_path: Path) -> Any:
    """Given a grant effective from December, a binding effective from November, and a revoke of the grant
    recorded later but effective from January."""
    settings = Settings(home=tmp_path / "home")
    catalog = open_catalog(settings)
    catalog.init(preset("spring-voyage"), META)
    catalog.register_connector("arxiv", None, ["arxiv.search"], META)
    catalog.create_unit("org", None, META)
    catalog.create_agent("ada", "org", "stateful", META)
    granted = catalog.add_grant("agent:ada", "arxiv.search", META, "2026-12-01T00:00:00Z").position
    catalog.bind_connector("arxiv", "org", META, "2026-11-01T00:00:00+00:00")
    revoked = catalog.revoke_grant("agent:ada", "arxiv.search", META, "2027-01-01T00:00:00Z").position
    con = open_read_model(settings)
    catch_up(catalog, Projector(con))
    yield con, granted, revoked
    con.close()
    catalog.close()


def test_as_known_now_each_effective_time_sees_what_was_in_effect_then(story: Any) -> None:
    con, _, revoked = story
    assert seen(con, revoked, "2026-10-01T00:00:00Z") == []
    assert seen(con, revoked, "2026-11-15T00:00:00Z") == [("arxiv.search", "connector:arxiv")]
    assert seen(con, revoked, "2026-12-15T00:00:00Z") == [("arxiv.search", "explicit")]
    assert seen(con, revoked, "2027-02-01T00:00:00Z") == [("arxiv.search", "connector:arxiv")]


def test_as_known_before_the_revoke_the_grant_still_lasts(story: Any) -> None:
    con, granted, revoked = story
    # known at the position before the revoke: in February the grant was still expected to hold
    assert seen(con, revoked - 1, "2027-02-01T00:00:00Z") == [("arxiv.search", "explicit")]
    # known right after the grant only: no binding yet, and the grant not yet in effect in November
    assert seen(con, granted, "2026-11-15T00:00:00Z") == []


def test_without_an_effective_time_answers_follow_recording_order(story: Any) -> None:
    con, granted, revoked = story
    assert seen(con, granted, None) == [("arxiv.search", "explicit")]
    assert seen(con, revoked, None) == [("arxiv.search", "connector:arxiv")]


def test_a_bad_effective_time_is_a_usage_error_and_writes_nothing(tmp_path: Path) -> None:
    catalog = open_catalog(Settings(home=tmp_path / "home"))
    catalog.create_unit("org", None, META)
    catalog.create_agent("ada", "org", "stateful", META)
    before = catalog.recorder.max_notification_id()
    with pytest.raises(UsageError):
        catalog.add_grant("agent:ada", "x.*", META, "next tuesday")
    assert catalog.recorder.max_notification_id() == before
    catalog.close()
