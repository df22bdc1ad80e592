"""One subject's effective history by its own query (migration 188, what the console's changes of a subject
read) is that subject's share of the general one, row for row: on a scripted story with grants and their
revokes, connectors bound and unbound, images of agents and of units, an allowlist that names an alias
through its whole window (added, deprecated, migrated, retired) and a rename; and on random command
sequences.

Real SQLite file store and DuckDB read model; the property-based story uses a fresh temporary directory per
example.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import duckdb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.catalog import Catalog
from domain.errors import CatalogRuleError
from domain.naming import preset
from projections.catchup import catch_up
from projections.projector import Projector
from projections.rows import select_rows
from tests.integration.test_effective_history import (
    ALL_SUBJECTS, AGENTS, IMAGE_TOOLS, META, STORY_SUBJECTS, UNITS, commands, open_pair, run_command,
    scripted_story, setups, spec,
)

STORY_UNITS_IMAGES = [  # added to the scripted story: the images units run, and their rotation
    ("image org", lambda c: c.declare_image("unit:org", "registry/org:1", ["img.alpha", "web.fetch"], META)),
    ("image research", lambda c: c.declare_image("unit:research", "registry/research:1", ["img.beta"], META)),
    ("image org rotated", lambda c: c.declare_image("unit:org", "registry/org:2", ["img.gamma"], META)),
]


def general(con: duckdb.DuckDBPyConnection, kind: str, name: str) -> list[dict[str, Any]]:
    """The subject's versions as the view answers them (migrations 093, 182), sorted."""
    return select_rows(con, "SELECT * FROM effective_history WHERE subject_kind = $k AND subject = $n ORDER BY ALL",
                       {"k": kind, "n": name})


def narrow(con: duckdb.DuckDBPyConnection, kind: str, name: str) -> list[dict[str, Any]]:
    """The same by migration 188's query, asked with parameters as the console asks it, sorted."""
    return select_rows(con, "SELECT * FROM effective_history_for_subject($k, $n) ORDER BY ALL", {"k": kind, "n": name})


def test_given_the_story_with_unit_images_then_each_subject_s_history_is_its_share_of_the_general_one(
        home: Path) -> None:
    # given the scripted story, with images run by units, projected event by event
    catalog, con = open_pair(home)
    try:
        steps = [step for _, step in scripted_story(catalog)]
        steps += [lambda step=step: step(catalog) for _, step in STORY_UNITS_IMAGES]
        for step in steps:
            step()
            catch_up(catalog, Projector(con))
        # when each subject's history is asked of the narrow query; then it is the general one's, row for row
        for kind, name in STORY_SUBJECTS:
            rows = narrow(con, kind, name)
            assert rows and rows == general(con, kind, name), (kind, name)
            # and written `kind:name`, as analysts write it, the same
            assert select_rows(con, f"SELECT * FROM effective_history_of_subject('{kind}:{name}') ORDER BY ALL") == rows
        # and the story reaches what the query cuts differently: a unit's own image tools, a revoke ending a
        # version, an allowlist that disables a tool for a while, a name that never was a subject
        org = narrow(con, "unit", "org")
        assert {r["tool_id"] for r in org if r["provenance"] == "image"} == {"img.alpha", "web.fetch", "img.gamma"}
        a1 = narrow(con, "agent", "a1")
        assert any(r["tool_id"] == "web.fetch" and r["provenance"] == "explicit" and r["valid_to"] for r in a1)
        assert any(r["exposure"] == "disabled_by_agent_allowlist" for r in a1)
        assert narrow(con, "agent", "nobody") == [] and narrow(con, "team", "org") == []
    finally:
        con.close()
        catalog.close()


unit_images = st.tuples(st.just("unit image"), st.sampled_from(sorted(UNITS)),
                        st.lists(st.sampled_from(IMAGE_TOOLS), max_size=3))
mixed = st.one_of(commands, unit_images)
sequences = st.tuples(setups, st.lists(mixed, min_size=1, max_size=14)).map(lambda parts: parts[0] + parts[1])


def run_mixed(catalog: Catalog, command: tuple[Any, ...]) -> None:
    if command[0] == "unit image":
        catalog.declare_image(f"unit:{command[1]}", f"registry/{command[1]}:{len(command[2])}", command[2], META)
    else:
        run_command(catalog, command)


# 8 examples: each projects one story and asks six subjects twice (≈ 1–2 s an example).
@settings(max_examples=8, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sequences)
def test_random_command_sequences_give_each_subject_its_share_of_the_general_history(
        sequence: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        catalog, con = open_pair(Path(directory))
        try:
            catalog.init(preset("spring-voyage"), META)
            catalog.register_tool("sv.runtime.echo", spec(), META)
            for command in sequence:
                try:
                    run_mixed(catalog, command)
                except CatalogRuleError:
                    continue  # a rule rejected it: nothing written
                catch_up(catalog, Projector(con))
            for kind, name in ALL_SUBJECTS:
                assert narrow(con, kind, name) == general(con, kind, name), (kind, name, sequence)
        finally:
            con.close()
            catalog.close()
