"""The effective tool set through history: as-of answers equal what was answered live, page sizes do
not matter, and the incrementally maintained set equals a from-scratch recomputation.

Real SQLite file store and DuckDB read model; the property-based story uses a fresh temporary
directory per example.
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.base import Meta
from domain.catalog import Catalog
from domain.errors import CatalogRuleError, Unavailable
from domain.naming import preset
from domain.values import ToolSpec
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from projections.catchup import catch_up
from projections.effective.reads import effective_rows, subjects_at
from projections.effective.maintenance import valid_through
from projections.effective.rebuild import rebuild_all
from projections.projector import Projector
from projections.tracking import Tracking, read_tracking
from projections.queries import current_effective
from projections.rows import run, select_rows

META = Meta(actor="tester", reason="history")

# Every table the subjects projection keeps history in, plus the materialized set and the events.
HISTORY_TABLES = ["effective_tools", "grant_history", "binding_history", "tool_history", "alias_history",
                  "unit_history", "agent_history", "allowlist_history", "image_history", "connector_history",
                  "platform_namespaces", "pattern_shims", "events"]


def spec(source: str = "builtin", **fields: Any) -> ToolSpec:
    return ToolSpec(source=source, group="core", tier="default", visibility="public", **fields)


def whole_set(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every row of effective_tools, in the order effective_rows answers."""
    return select_rows(con, "SELECT * FROM effective_tools ORDER BY subject_kind, subject, tool_id")


def subject_set(con: duckdb.DuckDBPyConnection, kind: str, name: str) -> list[dict[str, Any]]:
    return select_rows(con, "SELECT * FROM effective_tools WHERE subject_kind = ? AND subject = ? "
                            "ORDER BY tool_id", [kind, name])


def table(con: duckdb.DuckDBPyConnection, name: str) -> list[dict[str, Any]]:
    return select_rows(con, f"SELECT * FROM {name} ORDER BY ALL")


HISTORY_FIELDS = ("subject_kind", "subject", "tool_key", "tool_id", "namespace", "description", "provenance",
                  "inherited_from", "exposure")


def history_rows(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Every row of effective_history with its validity, in the order effective_rows answers a set."""
    return select_rows(con, f"SELECT {', '.join(HISTORY_FIELDS)}, valid_from, valid_to FROM effective_history "
                            "ORDER BY subject_kind, subject, tool_id, valid_from")


def valid_at(history: list[dict[str, Any]], position: int) -> list[dict[str, Any]]:
    """The rows of `history` valid at `position`, as the view filtered on that position answers them."""
    return [{field: row[field] for field in HISTORY_FIELDS} for row in history
            if row["valid_from"] <= position and (row["valid_to"] is None or row["valid_to"] > position)]


def open_pair(home: Path) -> tuple[Catalog, duckdb.DuckDBPyConnection]:
    settings = Settings(home=home, event_store_url=None)
    return open_catalog(settings), open_read_model(settings)


# --- the scripted story --------------------------------------------------------------------------------

STORY_SUBJECTS = [("agent", "a1"), ("agent", "a2"), ("unit", "org"), ("unit", "ops"), ("unit", "research")]


def scripted_story(c: Catalog) -> list[tuple[str, Callable[[], Any]]]:
    """A Spring-Voyage story with a revoke, an unbind/rebind, an image rotation, a rename and an alias
    retirement; each step one command."""
    m = META
    return [
        ("init", lambda: c.init(preset("spring-voyage"), m)),
        ("release 1.0.0", lambda: c.publish_release("1.0.0", m)),
        ("sv.runtime.echo", lambda: c.register_tool("sv.runtime.echo", spec(), m)),
        ("web.search", lambda: c.register_tool("web.search", spec(description="search"), m)),
        ("web.fetch", lambda: c.register_tool("web.fetch", spec(requires_state=True), m)),
        ("unit org", lambda: c.create_unit("org", None, m)),
        ("unit research", lambda: c.create_unit("research", "org", m)),
        ("unit ops", lambda: c.create_unit("ops", None, m)),
        ("agent a1", lambda: c.create_agent("a1", "research", "stateless", m)),
        ("agent a2", lambda: c.create_agent("a2", "org", "stateful", m)),
        ("connector", lambda: c.register_connector("arxiv", None, ["arxiv.search", "arxiv.fetch"], m)),
        ("bind org", lambda: c.bind_connector("arxiv", "org", m)),
        ("grant web.* org", lambda: c.add_grant("unit:org", "web.*", m)),
        ("grant web.fetch a1", lambda: c.add_grant("agent:a1", "web.fetch", m)),
        ("grant arxiv.search a2", lambda: c.add_grant("agent:a2", "arxiv.search", m)),
        ("web.late", lambda: c.register_tool("web.late", spec(input_schema={"type": "strng"}), m)),
        ("revoke web.fetch a1", lambda: c.revoke_grant("agent:a1", "web.fetch", m)),
        ("unbind org", lambda: c.unbind_connector("arxiv", "org", m)),
        ("bind research", lambda: c.bind_connector("arxiv", "research", m)),
        ("unbind research", lambda: c.unbind_connector("arxiv", "research", m)),
        ("rebind org", lambda: c.bind_connector("arxiv", "org", m)),
        ("image 1", lambda: c.declare_image("a1", "registry/a1:1", ["img.alpha", "img.beta"], m)),
        ("image 2", lambda: c.declare_image("a1", "registry/a1:2", ["img.gamma", "sv.runtime.echo"], m)),
        ("allowlist a1", lambda: c.set_allowlist("a1", ["web.*", "img.gamma"], m)),
        ("alias", lambda: c.add_alias("web.fetch", "web_fetch", False, m)),
        ("allowlist a2", lambda: c.set_allowlist("a2", ["web_fetch", "web.search", "sv.*"], m)),
        ("rename", lambda: c.rename_tool("web.search", "web.find", m)),
        ("grant ops", lambda: c.add_grant("unit:ops", "web.find", m)),
        ("deprecate", lambda: c.deprecate_alias("web_fetch", m)),
        ("release 1.1.0", lambda: c.publish_release("1.1.0", m)),
        *[(f"milestone {name}", lambda name=name: c.record_milestone("web_fetch", name, "1.1.0", "done", m))
          for name in ("canonical_shipped", "docs_shipped", "data_rewrite_shipped")],
        ("release 1.2.0", lambda: c.publish_release("1.2.0", m)),
        ("alias only", lambda: c.record_milestone("web_fetch", "alias_only_emission", "1.2.0", "meta", m)),
        ("step 1", lambda: c.record_step("web_fetch", 1, "documented", m)),
        ("migrate", lambda: c.migrate_alias("web_fetch", m)),  # a2's allowlist names web_fetch
        ("step 2", lambda: c.record_step("web_fetch", 2, "migrated", m)),
        ("release 1.3.0", lambda: c.publish_release("1.3.0", m)),
        ("retire", lambda: c.retire_alias("web_fetch", "1.3.0", m)),
        ("clear a1", lambda: c.clear_allowlist("a1", m)),
        ("revoke web.* org", lambda: c.revoke_grant("unit:org", "web.*", m)),
    ]


def test_given_a_scripted_story_when_asked_as_of_each_position_then_the_answer_equals_the_live_set(
        sqlite_settings: Settings) -> None:
    catalog, con = open_catalog(sqlite_settings), open_read_model(sqlite_settings)
    try:
        snapshots: list[tuple[str, int, list[dict[str, Any]], dict[tuple[str, str], list[dict[str, Any]]]]] = []
        for name, command in scripted_story(catalog):
            command()
            position = catch_up(catalog, Projector(con)).position
            snapshots.append((name, position, whole_set(con),
                              {s: subject_set(con, *s) for s in STORY_SUBJECTS}))

        positions = [p for _, p, _, _ in snapshots]
        assert positions == sorted(set(positions)), "every command of the story wrote something"
        previous: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for name, position, rows, per_subject in snapshots:
            # every subject at once, at every position …
            assert effective_rows(con, STORY_SUBJECTS, at=position) == rows, f"after {name} (position {position})"
            # … and one subject at a time wherever its set changed (and always for the deepest agent)
            for subject, subject_rows in per_subject.items():
                if subject == ("agent", "a1") or previous.get(subject) != subject_rows:
                    assert effective_rows(con, [subject], at=position) == subject_rows, f"{subject} after {name}"
            previous = per_subject

        # a few checkpoints of the story itself, so the comparison above is not vacuous
        by_name = {name: rows for name, _, rows, _ in snapshots}

        def ids(rows: list[dict[str, Any]], subject: tuple[str, str]) -> dict[str, str]:
            return {r["tool_id"]: r["provenance"] for r in rows if (r["subject_kind"], r["subject"]) == subject}

        assert ids(by_name["grant web.fetch a1"], ("agent", "a1"))["web.fetch"] == "explicit"
        assert "arxiv.fetch" not in ids(by_name["unbind org"], ("agent", "a1"))
        assert ids(by_name["bind research"], ("agent", "a1"))["arxiv.fetch"] == "connector:arxiv"
        assert "arxiv.fetch" not in ids(by_name["bind research"], ("agent", "a2"))
        assert "img.alpha" in ids(by_name["image 1"], ("agent", "a1"))
        assert "img.alpha" not in ids(by_name["image 2"], ("agent", "a1"))
        assert ids(by_name["image 2"], ("agent", "a1"))["sv.runtime.echo"] == "platform"
        assert "web.find" in ids(by_name["rename"], ("agent", "a1"))
        assert "web.search" not in ids(by_name["rename"], ("agent", "a1"))

        def exposure(rows: list[dict[str, Any]], agent: str, tool_id: str) -> str:
            return next(r["exposure"] for r in rows if r["subject"] == agent and r["tool_id"] == tool_id)

        assert exposure(by_name["step 2"], "a2", "web.fetch") == "enabled"
        # migrated before step 2, a2's allowlist names web.fetch: retiring web_fetch takes nothing away
        assert exposure(by_name["migrate"], "a2", "web.fetch") == "enabled"
        assert exposure(by_name["retire"], "a2", "web.fetch") == "enabled"
        assert exposure(by_name["rename"], "a2", "web.find") == "enabled"  # the old ID still enables it
        assert exposure(by_name["allowlist a1"], "a1", "sv.runtime.echo") == "disabled_by_agent_allowlist"
        assert exposure(by_name["clear a1"], "a1", "sv.runtime.echo") == "enabled"
        assert ids(by_name["revoke web.* org"], ("unit", "org")) == {
            "arxiv.fetch": "connector:arxiv", "arxiv.search": "connector:arxiv", "sv.runtime.echo": "platform"}
        # before anything existed, nobody had anything
        assert effective_rows(con, STORY_SUBJECTS, at=0) == []
    finally:
        con.close()
        catalog.close()


def test_given_the_story_when_caught_up_one_event_per_page_or_in_one_page_then_the_read_models_are_equal(
        home: Path) -> None:
    settings = Settings(home=home, event_store_url=None)
    catalog = open_catalog(settings)
    try:
        for _, command in scripted_story(catalog):
            command()
        small = open_read_model(settings, path=home / "paged.duckdb")
        big = open_read_model(settings, path=home / "whole.duckdb")
        try:
            after_each_event: dict[int, list[dict[str, Any]]] = {}
            def live(tracking: Tracking) -> None:
                # A catch-up refreshes the sets once at its end; settling after each page shows them live.
                Projector(small).settle()
                after_each_event[tracking.position] = whole_set(small)

            paged = catch_up(catalog, Projector(small), page_size=1, progress=live)
            assert paged == catch_up(catalog, Projector(big), page_size=100_000)
            for name in [*HISTORY_TABLES, "effective_history", "events", "effective_documents"]:
                assert table(small, name) == table(big, name), name
            # as of every single event (also inside a multi-event command), both answer what was live then
            assert sorted(after_each_event) == list(range(1, paged.position + 1))
            history = history_rows(small)  # the same rows in both: effective_history was compared above
            for position, rows in after_each_event.items():
                assert effective_rows(small, STORY_SUBJECTS, at=position) == rows, f"position {position}"
                assert effective_rows(big, STORY_SUBJECTS, at=position) == rows, f"position {position}"
                assert valid_at(history, position) == rows, f"history at {position}"
            assert whole_set(small) == effective_rows(small, STORY_SUBJECTS)
            assert len(whole_set(small)) > 10
        finally:
            small.close()
            big.close()
    finally:
        catalog.close()


# --- the property: random command sequences -------------------------------------------------------------

UNITS = {"org": None, "research": "org", "ops": None}
AGENTS = {"a1": ("research", "stateless"), "a2": ("org", "stateful"), "a3": ("ops", "stateless")}
CONNECTORS = {"arxiv": ["arxiv.search", "arxiv.fetch"], "gh": ["gh.issue", "gh.pr"]}
PLAIN = {"web.search": {}, "web.fetch": {"requires_state": True}, "notes.find": {},
         "notes.bad": {"input_schema": {"type": "strng"}}}
PLATFORM = ["sv.runtime.echo", "sv.runtime.clock"]
IMAGE_TOOLS = ["img.alpha", "img.beta", "sv.runtime.echo", "arxiv.search", "web.search"]
ALL_TOOLS = [*PLAIN, *PLATFORM, *[t for ts in CONNECTORS.values() for t in ts], "img.alpha"]
SUBJECTS = [*(f"unit:{u}" for u in UNITS), *(f"agent:{a}" for a in AGENTS)]
TARGETS = [*ALL_TOOLS, "web.*", "arxiv.*", "sv.*", "img.*", "web.get"]
ALL_SUBJECTS = [*(("unit", u) for u in UNITS), *(("agent", a) for a in AGENTS)]

creations = st.one_of(
    st.tuples(st.just("unit"), st.sampled_from(sorted(UNITS))),
    st.tuples(st.just("agent"), st.sampled_from(sorted(AGENTS))),
    st.tuples(st.just("tool"), st.sampled_from([*PLAIN, *PLATFORM])),
    st.tuples(st.just("connector"), st.sampled_from(sorted(CONNECTORS))),
)
changes = st.one_of(
    st.tuples(st.just("bind"), st.sampled_from(sorted(CONNECTORS)), st.sampled_from(sorted(UNITS))),
    st.tuples(st.just("unbind"), st.sampled_from(sorted(CONNECTORS)), st.sampled_from(sorted(UNITS))),
    st.tuples(st.just("grant"), st.sampled_from(SUBJECTS), st.sampled_from(TARGETS)),
    st.tuples(st.just("revoke"), st.sampled_from(SUBJECTS), st.sampled_from(TARGETS)),
    st.tuples(st.just("image"), st.sampled_from(sorted(AGENTS)),
              st.lists(st.sampled_from(IMAGE_TOOLS), max_size=3)),
    st.tuples(st.just("allow"), st.sampled_from(sorted(AGENTS)),
              st.lists(st.sampled_from([*ALL_TOOLS, "web.*", "sv.*", "*"]), min_size=1, max_size=3)),
    st.tuples(st.just("clear"), st.sampled_from(sorted(AGENTS))),
    st.tuples(st.just("rename"), st.just("web.fetch"), st.just("web.get")),
)
commands = st.one_of(creations, changes, changes, changes)  # mostly changes to what exists


def run_command(c: Catalog, command: tuple[Any, ...]) -> None:
    kind, *args = command
    if kind == "unit":
        c.create_unit(args[0], UNITS[args[0]], META)
    elif kind == "agent":
        unit, mode = AGENTS[args[0]]
        c.create_agent(args[0], unit, mode, META)
    elif kind == "tool":
        c.register_tool(args[0], spec(**PLAIN.get(args[0], {})), META)
    elif kind == "connector":
        c.register_connector(args[0], None, CONNECTORS[args[0]], META)
    elif kind == "bind":
        c.bind_connector(args[0], args[1], META)
    elif kind == "unbind":
        c.unbind_connector(args[0], args[1], META)
    elif kind == "grant":
        c.add_grant(args[0], args[1], META)
    elif kind == "revoke":
        c.revoke_grant(args[0], args[1], META)
    elif kind == "image":
        c.declare_image(args[0], f"registry/{args[0]}:{len(args[1])}", args[1], META)
    elif kind == "allow":
        c.set_allowlist(args[0], args[1], META)
    elif kind == "clear":
        c.clear_allowlist(args[0], META)
    elif kind == "rename":
        c.rename_tool(args[0], args[1], META)
    else:  # pragma: no cover - the strategy draws nothing else
        raise AssertionError(kind)


# Creations in an order that satisfies their dependencies; each example starts with a random subset of
# them (so most later commands have something to act on) and goes on with random commands.
SETUP: list[tuple[Any, ...]] = [("unit", "org"), ("unit", "research"), ("unit", "ops"),
                                *(("agent", a) for a in AGENTS), *(("connector", k) for k in CONNECTORS),
                                *(("tool", t) for t in [*PLAIN, *PLATFORM])]
setups = st.lists(st.integers(0, 3).map(bool), min_size=len(SETUP), max_size=len(SETUP)).map(
    lambda keep: [step for step, kept in zip(SETUP, keep) if kept])
sequences = st.tuples(setups, st.lists(commands, min_size=1, max_size=12)).map(lambda parts: parts[0] + parts[1])


# 6 examples: each builds three read models and reads the view at every position (≈ 3–7 s); 25 took 107 s
# of the suite and 10 took 34 s, for little more coverage per run.
@settings(max_examples=6, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sequences, st.integers(1, 4))
def test_random_command_sequences_answer_as_of_every_position_as_they_answered_live(
        sequence: list[tuple[Any, ...]], page_size: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        home = Path(directory)
        catalog, con = open_pair(home)
        try:
            catalog.init(preset("spring-voyage"), META)
            catalog.register_tool("sv.runtime.echo", spec(), META)
            recorded: list[tuple[int, list[dict[str, Any]]]] = []
            for command in sequence:
                try:
                    run_command(catalog, command)
                except CatalogRuleError:
                    continue  # a rule rejected it: nothing written, nothing to record
                position = catch_up(catalog, Projector(con)).position
                recorded.append((position, whole_set(con)))

            for position, rows in recorded:  # (a) the --at answer equals what was answered live
                assert effective_rows(con, ALL_SUBJECTS, at=position) == rows, f"at position {position}"
            live = whole_set(con)  # (b) incremental maintenance equals a from-scratch recomputation
            assert live == effective_rows(con, ALL_SUBJECTS)
            # (c) effective_history (computed from the history tables) holds at every position the as-of set;
            # the view is read once (it is costly) and the as-of set computed only where (a) has not.
            head = read_tracking(con).position
            history = history_rows(con)
            answered = dict(recorded)
            for position in range(head + 1):
                expected = answered.get(position) or effective_rows(con, ALL_SUBJECTS, at=position)
                assert valid_at(history, position) == expected, position
            fresh = open_read_model(Settings(home=home, event_store_url=None), path=home / "fresh.duckdb")
            paged = open_read_model(Settings(home=home, event_store_url=None), path=home / "paged.duckdb")
            try:
                catch_up(catalog, Projector(fresh), page_size=100_000)
                assert whole_set(fresh) == live
                # (d) and the same rows whether built command by command, in one page or in small pages
                catch_up(catalog, Projector(paged), page_size=page_size)
                assert table(fresh, "effective_history") == table(con, "effective_history")
                assert table(paged, "effective_history") == table(con, "effective_history")
            finally:
                fresh.close()
                paged.close()
        finally:
            con.close()
            catalog.close()



class Crash(Exception):
    """The projector process dying between two pages of a catch-up."""


def crash_after(pages: int) -> Callable[[Tracking], None]:
    seen: list[Tracking] = []

    def progress(tracking: Tracking) -> None:
        seen.append(tracking)
        if len(seen) == pages:
            raise Crash
    return progress


@settings(max_examples=6, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sequences, st.integers(1, 4), st.integers(1, 6))
def test_a_catch_up_that_crashed_between_pages_is_refused_to_readers_and_repaired_by_the_next_run(
        sequence: list[tuple[Any, ...]], page_size: int, pages: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        home = Path(directory)
        catalog, con = open_pair(home)
        try:
            # given a history, and a catch-up in small pages that dies after some of them
            catalog.init(preset("spring-voyage"), META)
            for command in sequence:
                try:
                    run_command(catalog, command)
                except CatalogRuleError:
                    continue
            try:
                catch_up(catalog, Projector(con), page_size=page_size, progress=crash_after(pages))
            except Crash:
                pass
            reached = read_tracking(con).position
            # then either the sets were refreshed with the tracking row, or readers are told they trail it
            if valid_through(con) < reached:
                with pytest.raises(Unavailable):
                    current_effective(con, "agent:a1")
            # when the next run has no new event to apply (it stops where the crash did), it still repairs them
            catch_up(catalog, Projector(con), until=reached)
            assert valid_through(con) == reached
            assert whole_set(con) == effective_rows(con, ALL_SUBJECTS)
            # and when it goes on to the end, the read model equals one built in one go
            catch_up(catalog, Projector(con), page_size=page_size)
            fresh = open_read_model(Settings(home=home, event_store_url=None), path=home / "fresh.duckdb")
            try:
                catch_up(catalog, Projector(fresh), page_size=100_000)
                assert whole_set(con) == whole_set(fresh) == effective_rows(con, ALL_SUBJECTS)
                assert table(con, "effective_documents") == table(fresh, "effective_documents")
            finally:
                fresh.close()
        finally:
            con.close()
            catalog.close()


def test_given_a_catch_up_over_many_changes_then_each_subject_is_queued_once_at_its_last_change(
        sqlite_settings: Settings) -> None:
    # given the scripted story written, remembering where the last command touching unit ops landed
    catalog, con = open_catalog(sqlite_settings), open_read_model(sqlite_settings)
    try:
        positions = {name: command().position for name, command in scripted_story(catalog)}
        # when one catch-up projects all of it in small pages
        head = catch_up(catalog, Projector(con), page_size=3).position
        queued = dict(con.execute("SELECT subject, position FROM changelog_outbox").fetchall())
        # then every subject is queued once, at the last event that changed its set, not at the batch end
        assert con.execute("SELECT count(*) FROM changelog_outbox").fetchone()[0] == len(queued) == 5
        assert queued["unit:ops"] == positions["grant ops"] < head
        assert queued["agent:a1"] == queued["unit:org"] == positions["revoke web.* org"] == head
    finally:
        con.close()
        catalog.close()


@pytest.fixture
def projected_story(sqlite_settings: Settings) -> Iterator[duckdb.DuckDBPyConnection]:
    """The scripted story written and projected (its sets materialized): its read model."""
    catalog, con = open_catalog(sqlite_settings), open_read_model(sqlite_settings)
    try:
        for _, command in scripted_story(catalog):
            command()
        catch_up(catalog, Projector(con))
        yield con
    finally:
        con.close()
        catalog.close()


def test_given_the_story_when_every_set_is_rebuilt_a_subject_at_a_time_then_nothing_changes(
        projected_story: duckdb.DuckDBPyConnection) -> None:
    # given the story projected (its sets materialized), and its documents altered for one subject
    con = projected_story
    tools, documents = whole_set(con), table(con, "effective_documents")
    con.execute("UPDATE effective_documents SET tools = '[]' WHERE subject = 'agent:a1'")
    # when every set is rebuilt in one pass, its documents rendered one subject at a time
    changed = rebuild_all(con, subjects_at(con), chunk=1)
    # then only the altered document was rewritten, and everything equals what it was
    assert changed == ["agent:a1"]
    assert whole_set(con) == tools and table(con, "effective_documents") == documents


def test_given_the_story_when_one_subject_s_history_is_asked_then_it_is_that_subject_s_share_of_the_view(
        projected_story: duckdb.DuckDBPyConnection) -> None:
    # given the story projected
    con = projected_story
    every = table(con, "effective_history")
    assert len(every) > 20
    # when each subject's versions are asked of the macro, then together they are the view, row for row
    shares = []
    for kind, name in STORY_SUBJECTS:
        # (literals: DuckDB binds no prepared parameter inside a table macro's GROUP BY)
        share = select_rows(con, f"SELECT * FROM effective_history_of('{kind}', '{name}') ORDER BY ALL")
        assert share, (kind, name)
        assert {(r["subject_kind"], r["subject"]) for r in share} == {(kind, name)}
        shares += share
    assert sorted(shares, key=repr) == sorted(every, key=repr)
    # and a kind alone asks for every subject of that kind
    agents = select_rows(con, "SELECT * FROM effective_history_of('agent', NULL) ORDER BY ALL")
    assert agents == [r for r in every if r["subject_kind"] == "agent"]


def test_given_the_story_when_one_tool_s_history_is_asked_then_it_is_that_tool_s_share_of_the_view(
        projected_story: duckdb.DuckDBPyConnection) -> None:
    # given the story projected (it renames web.search to web.find and retires the alias web_fetch)
    con = projected_story
    every = table(con, "effective_history")
    keys = {r["tool_key"] for r in every}
    # when each tool's versions are asked of the macro by its canonical ID now, then together they are
    # the view, row for row, each tool's rows under every ID it had
    shares = []
    for tool_id, tool_key in run(con, "SELECT canonical_id, tool_key FROM tools WHERE tool_key IN "
                                      f"({', '.join(repr(k) for k in keys)})"):
        share = select_rows(con, f"SELECT * FROM effective_history_of_tool('{tool_id}') ORDER BY ALL")
        assert share and {r["tool_key"] for r in share} == {tool_key}, tool_id
        shares += share
    assert sorted(shares, key=repr) == sorted(every, key=repr)
    # and an ID the tool had before its rename, or an alias, names the same tool: all of its versions
    found = select_rows(con, "SELECT * FROM effective_history_of_tool('web.find') ORDER BY ALL")
    assert {r["tool_id"] for r in found} == {"web.search", "web.find"}
    assert select_rows(con, "SELECT * FROM effective_history_of_tool('web.search') ORDER BY ALL") == found
    fetch = select_rows(con, "SELECT * FROM effective_history_of_tool('web.fetch') ORDER BY ALL")
    assert fetch and select_rows(con, "SELECT * FROM effective_history_of_tool('web_fetch') ORDER BY ALL") == fetch
    # and an ID that never named a tool has no history
    assert select_rows(con, "SELECT * FROM effective_history_of_tool('no.such.tool')") == []


def test_given_the_story_when_a_subject_is_named_as_who_can_names_it_then_its_share_is_the_macro_s(
        projected_story: duckdb.DuckDBPyConnection) -> None:
    con = projected_story
    for kind, name in STORY_SUBJECTS:
        # when asked as `agent:a1` / `unit:org`; then the same rows as the kind and name apart
        named = select_rows(con, f"SELECT * FROM effective_history_of_subject('{kind}:{name}') ORDER BY ALL")
        assert named and named == select_rows(
            con, f"SELECT * FROM effective_history_of('{kind}', '{name}') ORDER BY ALL"), (kind, name)


def test_given_a_unit_running_an_image_when_its_history_is_asked_then_the_share_holds_the_image_tools(
        sqlite_settings: Settings) -> None:
    # given a unit that runs an image (its tools are the unit's own)
    catalog, con = open_pair(sqlite_settings.home)
    try:
        catalog.init(preset("spring-voyage"), META)
        catalog.create_unit("org", None, META)
        catalog.declare_image("unit:org", "registry/org:1", ["img.alpha"], META)
        catch_up(catalog, Projector(con))
        # when its history is asked of the view and of the share; then both hold the image's tool
        view = select_rows(con, "SELECT * FROM effective_history WHERE subject = 'org' ORDER BY ALL")
        assert [r["tool_id"] for r in view] == ["img.alpha"]
        assert select_rows(con, "SELECT * FROM effective_history_of_subject('unit:org') ORDER BY ALL") == view
    finally:
        con.close()
        catalog.close()
