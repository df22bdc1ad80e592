"""The follower's own refresh for grants added (projections/effective/fast_grants.py), as stories on the real
SQLite store and DuckDB read model: given the example catalog projected, when a batch of grants is applied,
then the delta refreshes the sets and they are exactly what the general query computes from history (no
row and no document differs), the subjects it says changed are exactly those whose document changed, and
a batch the delta cannot explain falls back to the general query."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from domain.base import Meta
from domain.catalog import Catalog
from domain.errors import CatalogRuleError, DuplicateGrant
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from infra.projecting import store_pass
from projections.effective import fast_grants
from projections.catchup import catch_up, history_reader
from projections.catalog_part import CatalogPart
from projections.effective.reads import subjects_at
from projections.effective.fast_ways import WAY_TOOLS_CHANGED_BY
from projections.effective.reach import REACH_EVENTS
from projections.effective.maintenance import Maintenance, is_settled
from projections.envelope import chain_all
from projections.fingerprint import fingerprint
from projections.effective.rebuild import materialized_differences
from projections.projector import Projector, default_parts
from projections.subjects_part import SubjectsPart
from projections.rows import run, select_rows
from tests.support import run_example

META = Meta(actor="tester")


class Home:
    """The example catalog, with one more unit below `support` and two agents without allowlists (or the
    Spring-Voyage one, with connectors, a platform namespace and images, and one more agent)."""

    def __init__(self, settings: Settings, story: str = "tyrum") -> None:
        run_example(settings.home, story)
        self.catalog: Catalog = open_catalog(settings)
        if story == "tyrum":
            self.catalog.create_unit("night", "support", META)
            self.catalog.create_agent("helper", "support", "stateful", META)
            self.catalog.create_agent("owl", "night", "stateless", META)
        else:
            self.catalog.create_agent("scout", "research", "stateless", META)
        self.con = open_read_model(settings)
        # A follower keeps its projector from pass to pass, as a server does (it keeps who holders reach)
        self.projector = Projector(self.con)
        catch_up(self.catalog, self.projector)

    def close(self) -> None:
        self.con.close()
        self.catalog.close()

    def apply(self) -> list[str] | None:
        """Apply what was written as one batch, unsettled, then the delta: what it says changed (None: it
        did not apply); then settle as a follower does."""
        tracking = Projector(self.con).tracking()
        records = history_reader(self.catalog)(tracking.position, 1000)
        Projector(self.con).apply(chain_all(records, tracking.position, tracking.hash), chained_here=True,
                                  settle=False)
        run(self.con, "BEGIN TRANSACTION")
        try:
            changed = fast_grants.refresh(self.con)
            Maintenance().refresh_dirty(self.con, records[-1].position)
        except BaseException:
            run(self.con, "ROLLBACK")  # the next example of a property test starts from a usable connection
            raise
        run(self.con, "COMMIT")
        self.projector = Projector(self.con)  # the follower's was not the writer of this batch
        return changed

    def follow(self) -> list[str]:
        """Apply what was written as a follower's store pass does (the batch refreshes its own sets in its
        transaction, from memory): the subjects it queued for the changelog."""
        position = self.projector.tracking().position
        store_pass(self.catalog, self.con, lambda con: 0, projector=self.projector)
        return sorted(subject for (subject,) in run(
            self.con, "SELECT subject FROM changelog_outbox WHERE position > ?", [position]))

    def documents(self) -> dict[str, str]:
        return {r["subject"]: r["tools"] for r in select_rows(self.con, "SELECT * FROM effective_documents")}

    def row(self, subject: str, tool_id: str) -> dict[str, Any] | None:
        kind, _, name = subject.partition(":")
        rows = select_rows(self.con, "SELECT * FROM effective_tools WHERE subject_kind = ? AND subject = ? "
                                     "AND tool_id = ?", [kind, name, tool_id])
        return rows[0] if rows else None

    def differences(self) -> int:
        return materialized_differences(self.con, subjects_at(self.con))


@pytest.fixture
def home(sqlite_settings: Settings) -> Iterator[Home]:
    opened = Home(sqlite_settings)
    yield opened
    opened.close()


def applied(home: Home, follow: bool = False) -> list[str] | None:
    """The batch applied: the delta's changed subjects, checked against the documents that changed and
    against the general query. `follow`: applied by a follower's pass (Home.follow)."""
    before = home.documents()
    changed = home.follow() if follow else home.apply()
    after = home.documents()
    assert home.differences() == 0
    if changed is not None:
        assert changed == sorted(s for s in before.keys() | after.keys() if before.get(s) != after.get(s))
    return changed


def test_a_grant_on_a_unit_reaches_the_units_and_agents_below_it(home: Home) -> None:
    # when unit eng is granted a tool none of them had
    home.catalog.add_grant("unit:eng", "webfetch", META)
    # then the delta applied, and every subject below eng sees it, inherited from eng
    assert applied(home) == ["agent:helper", "agent:owl", "agent:triage", "unit:eng", "unit:night",
                             "unit:support"]
    assert home.row("agent:owl", "webfetch") == {**home.row("agent:owl", "webfetch"), "provenance": "explicit",
                                                 "inherited_from": "eng", "exposure": "enabled"}
    assert home.row("unit:eng", "webfetch")["inherited_from"] is None
    # triage's allowlist does not name it: triage sees it disabled
    assert home.row("agent:triage", "webfetch")["exposure"] == "disabled_by_agent_allowlist"


def test_a_grant_on_an_agent_of_a_namespace_pattern(home: Home) -> None:
    home.catalog.add_grant("agent:helper", "tool.location.*", META)
    assert applied(home) == ["agent:helper"]
    row = home.row("agent:helper", "tool.location.place.delete")
    assert (row["provenance"], row["inherited_from"], row["exposure"]) == ("explicit", None, "enabled")


def test_a_closer_grant_keeps_its_row_and_a_farther_one_gives_way(home: Home) -> None:
    # given support's own grant of memory.write, which its agents inherit from support
    assert home.row("agent:helper", "memory.write")["inherited_from"] == "support"
    # when eng (above support) is granted it too, then nothing below support changes
    home.catalog.add_grant("unit:eng", "memory.write", META)
    assert applied(home) == ["unit:eng"]
    assert home.row("agent:helper", "memory.write")["inherited_from"] == "support"
    # when night (below support) is granted it, then night's agent takes it from night
    home.catalog.add_grant("unit:night", "memory.write", META)
    assert applied(home) == ["agent:owl", "unit:night"]
    assert home.row("agent:owl", "memory.write")["inherited_from"] == "night"


def test_a_revoke_leaves_the_next_best_way(home: Home) -> None:
    # given eng's grant of memory.write too, farther up support's chain than support's own
    home.catalog.add_grant("unit:eng", "memory.write", META)
    assert applied(home) == ["unit:eng"]
    # when support's grant is revoked, then support and the subjects below it take it from eng
    home.catalog.revoke_grant("unit:support", "memory.write", META)
    assert applied(home) == ["agent:helper", "agent:owl", "agent:triage", "unit:night", "unit:support"]
    assert home.row("agent:owl", "memory.write")["inherited_from"] == "eng"
    assert home.row("unit:support", "memory.write")["inherited_from"] == "eng"
    # when eng's is revoked too, then nobody has it any more
    home.catalog.revoke_grant("unit:eng", "memory.write", META)
    assert applied(home) == ["agent:helper", "agent:owl", "agent:triage", "unit:eng", "unit:night", "unit:support"]
    assert home.row("agent:owl", "memory.write") is None


def test_what_the_delta_cannot_explain_falls_back_to_the_general_query(home: Home) -> None:
    # a batch with another kind of event besides a grant
    home.catalog.add_grant("unit:night", "webfetch", META)
    home.catalog.create_unit("day", "support", META)
    assert applied(home) is None
    # and a grant alone again applies
    home.catalog.add_grant("unit:day", "grep", META)
    assert applied(home) == ["unit:day"]


HOLDERS = ["unit:eng", "unit:support", "unit:night", "agent:helper", "agent:owl", "agent:triage"]
TARGETS = ["read", "grep", "websearch", "webfetch", "memory.*", "memory.write", "tool.location.*", "bash",
           "acme.ticket.create"]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(st.tuples(st.sampled_from(HOLDERS), st.sampled_from(TARGETS)), min_size=1,
                                 max_size=4), min_size=1, max_size=3))
def test_any_batches_of_grants_added_equal_the_general_query(home: Home, batches: list[list[tuple[str, str]]]
                                                             ) -> None:
    for batch in batches:
        written = 0
        for holder, target in batch:
            with contextlib.suppress(DuplicateGrant):
                home.catalog.add_grant(holder, target, META)
                written += 1
        if written:  # grants alone: the delta applies, and equals a recomputation from history
            assert applied(home) is not None


@pytest.fixture
def voyage(tmp_path: Path) -> Iterator[Home]:
    opened = Home(Settings(home=tmp_path / "voyage", event_store_url=None), "spring-voyage")
    yield opened
    opened.close()


V_HOLDERS = ["unit:acme", "unit:research", "unit:papers", "unit:support", "agent:librarian", "agent:helpdesk",
             "agent:scout"]
V_TARGETS = ["websearch.query", "arxiv.*", "arxiv.search", "chat.post_message", "acme.cite", "sv.memory.search"]
V_UNITS = ["acme", "research", "papers", "support"]
V_ALLOWLISTS = [["sv.*"], ["chat.*", "arxiv.search"], ["*"], ["acme.cite", "websearch.*"]]
WAYS = st.one_of(
    st.tuples(st.sampled_from(["grant", "revoke"]), st.sampled_from(V_HOLDERS), st.sampled_from(V_TARGETS)),
    st.tuples(st.sampled_from(["bind", "unbind"]), st.sampled_from(["arxiv", "websearch", "slack"]),
              st.sampled_from(V_UNITS)),
    st.tuples(st.just("allowlist"), st.sampled_from(["librarian", "helpdesk", "scout"]),
              st.sampled_from(range(len(V_ALLOWLISTS) + 1))))


def change(catalog: Catalog, kind: str, one: str, other: Any) -> None:
    """One write of a random batch (a grant, a binding or an allowlist; the last allowlist choice clears)."""
    if kind in ("grant", "revoke"):
        (catalog.add_grant if kind == "grant" else catalog.revoke_grant)(one, other, META)
    elif kind in ("bind", "unbind"):
        (catalog.bind_connector if kind == "bind" else catalog.unbind_connector)(one, other, META)
    elif other < len(V_ALLOWLISTS):
        catalog.set_allowlist(one, V_ALLOWLISTS[other], META)
    else:
        catalog.clear_allowlist(one, META)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.tuples(st.lists(WAYS, min_size=1, max_size=5), st.booleans()), min_size=1, max_size=3))
def test_any_batches_of_ways_added_and_removed_equal_the_general_query(voyage: Home,
                                                                       batches: list[tuple[list[Any], bool]]) -> None:
    # given the Spring-Voyage story (connectors, the platform namespace sv, images, an allowlist)
    for batch, follow in batches:
        for way in batch:
            with contextlib.suppress(CatalogRuleError):  # a duplicate grant, a binding already there, …
                change(voyage.catalog, *way)
        # when grants, revokes, bindings and allowlists come in one batch, then the deltas apply, and the
        # sets equal a recomputation from history (checked by `applied`), whether the batch's dirty
        # subjects went through the tables or (a follower's pass) stayed in memory
        if (voyage.catalog.recorder.max_notification_id() or 0) > voyage.projector.tracking().position:
            assert applied(voyage, follow) is not None


def test_a_home_kept_by_a_follower_has_the_fingerprint_of_a_rebuild(home: Home, sqlite_settings: Settings,
                                                                   tmp_path: Path) -> None:
    # given a follower that applies each write in its own store pass (the settled one-page path), with the
    # projector it keeps from pass to pass
    def write(change: Any, *args: str) -> None:
        change(*args, META)
        store_pass(home.catalog, home.con, lambda con: 0, projector=home.projector)
    # when grants, revokes, a new unit and a new agent arrive one by one
    write(home.catalog.add_grant, "unit:eng", "webfetch")
    write(home.catalog.add_grant, "agent:owl", "memory.*")
    write(home.catalog.revoke_grant, "unit:support", "memory.write")
    write(home.catalog.create_unit, "day", "support")
    write(home.catalog.create_agent, "lark", "day", "stateful")
    write(home.catalog.add_grant, "unit:day", "grep")
    write(home.catalog.add_grant, "unit:support", "tool.location.*")
    # then nothing is left dirty, and a read model rebuilt from the store says the same, bit for bit
    assert is_settled(home.con, Projector(home.con).tracking().position)
    rebuilt = open_read_model(sqlite_settings, path=tmp_path / "rebuilt.duckdb")
    try:
        catch_up(home.catalog, Projector(rebuilt))
        assert fingerprint(home.con) == fingerprint(rebuilt)
    finally:
        rebuilt.close()


def test_a_tool_renamed_between_passes_of_grants_is_granted_as_it_is_named_now(home: Home) -> None:
    # given passes of grants alone: the follower's projector keeps the tools' facts they read across them
    for tool in ("webfetch", "websearch", "codesearch"):
        home.catalog.add_grant("unit:night", tool, META)
        applied(home, follow=True)
    # when a tool is renamed in a pass of its own, then granted in the next
    home.catalog.rename_tool("glob", "files.glob", META)
    applied(home, follow=True)
    home.catalog.add_grant("agent:owl", "files.glob", META)
    applied(home, follow=True)
    # then the grant's row names the tool as it is named now (the rename is no fact kept across), as the
    # general query does (applied: no row differs)
    assert home.row("agent:owl", "files.glob") == {**home.row("agent:owl", "files.glob"), "provenance": "explicit",
                                                   "inherited_from": None}
    assert home.row("agent:owl", "glob") is None


def tables_written(part: object) -> dict[str, set[str]]:
    """The tables a projection part writes, each with the event types its SQL builds them from (none: its
    handlers write them)."""
    written: dict[str, set[str]] = {}
    for buffer in getattr(part, "_buffers", tuple)():
        written.setdefault(buffer.table, set()).update(getattr(buffer, "types", ()))
    return written


def test_the_tools_facts_are_kept_across_every_event_but_the_catalog_parts_own() -> None:
    # the current tools' facts (way_tools.sql) come from tool_history, tools and platform_namespaces: no
    # part but the catalog part writes them, and it writes them with handlers of its own (its SQL builds
    # them from events it also handles), which are the events the facts are not kept across
    facts = {"tool_history", "tools", "platform_namespaces"}
    for part in default_parts():
        written = tables_written(part)
        if not isinstance(part, CatalogPart):
            assert facts.isdisjoint(written), type(part).__name__
        else:
            assert set().union(*(written[table] for table in facts)) <= WAY_TOOLS_CHANGED_BY
    # so a new event type is decided where it is projected: a handler of the catalog part's own changes
    # the facts, an ignored one does not
    assert {"Tool.Registered", "Tool.Renamed", "Tool.SchemaUpdated", "Policy.Recorded"} <= WAY_TOOLS_CHANGED_BY
    assert WAY_TOOLS_CHANGED_BY.isdisjoint({"Grants.Added", "IdempotencyKey.Used", "Unit.ConnectorBound"})


def test_who_holders_reach_is_kept_across_every_event_but_those_of_units_and_agents() -> None:
    # who holders reach (reach.py) is read from unit_history and agent_history, which only the subjects
    # part writes, from the events of REACH_EVENTS
    for part in default_parts():
        written = tables_written(part)
        if isinstance(part, SubjectsPart):
            assert written["unit_history"] | written["agent_history"] == REACH_EVENTS == {
                "Unit.Created", "Agent.Created"}
        else:
            assert {"unit_history", "agent_history"}.isdisjoint(written), type(part).__name__


def test_a_kept_projector_tells_the_subjects_its_passes_changed_once(home: Home) -> None:
    # given what the catch-up changed was told, then a grant to unit:night (agent owl below it) and one to
    # agent:helper, each applied by a pass
    assert "unit:night" in home.projector.take_changes()
    home.catalog.add_grant("unit:night", "webfetch", META)
    night = home.follow()
    home.catalog.add_grant("agent:helper", "webfetch", META)
    helper = home.follow()
    # then the projector tells the subjects both passes changed, as they were queued for the changelog
    assert home.projector.take_changes() == sorted(set(night) | set(helper)) == [
        "agent:helper", "agent:owl", "unit:night"]
    # and nothing once told, nor after a pass that changed no set
    assert home.projector.take_changes() == []
    home.catalog.publish_release("9.9.9", META)
    assert home.follow() == []
    assert home.projector.take_changes() == []


def test_a_catch_up_notes_nothing_after_its_first_general_and_its_follower_takes_the_delta_again(
        home: Home) -> None:
    # given a unit created (only the general query follows it), then grants, written since the last pass
    home.catalog.create_unit("day", "support", META)
    for tool in ("webfetch", "websearch", "grep"):
        home.catalog.add_grant("unit:day", tool, META)
    # when a catch-up applies them a page per event (the first grant opens the unit's grants: five), leaving
    # the sets to its end
    noting: list[bool] = []
    catch_up(home.catalog, home.projector, page_size=1,
             progress=lambda tracking: noting.append(not home.projector.effective.part({"Grants.Added"}).general))
    # then the pages after the unit's note nothing for the delta (its refresh runs the general query anyway),
    # and the sets the catch-up settled are those of history
    assert noting == [False] * 5
    assert home.projector.effective.last in ("subjects", "all")
    assert home.differences() == 0
    # and once settled, a follower's pass of grants alone takes the delta again
    assert home.projector.effective.part({"Grants.Added"}).general is False
    home.catalog.add_grant("unit:day", "read", META)
    assert applied(home, follow=True) == ["unit:day"]
    assert home.projector.effective.last == "fast"
