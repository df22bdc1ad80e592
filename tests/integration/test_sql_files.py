"""The queries of projections/sql/: each one loads, fills its fragments and runs on a real read model, and
the per-subject digests of the refresh follow the one digest scheme of the fingerprint."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from domain.base import Meta
from domain.naming import preset
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from projections.catchup import catch_up
from projections.effective.fast_ways import TOOLS_OF_KEYS, given_notes
from projections.effective.reads import INFINITY, effective_digest, subjects_at, subjects_registered
from projections.projector import Projector
from projections.console import console_index
from projections.rows import registered, run
from projections.sqlfiles import query, sql_files

META = Meta(actor="tester")
# A value for every parameter a query may name.
PARAMETERS: dict[str, Any] = {"at": INFINITY, "effective_at": None, "tool": "no-such-key", "ids": ["arxiv.search"],
                              "units": ["org"], "positions": [1], "key": "no-such-key", "id": "arxiv.search",
                              "alias": "arxiv.find", "kind": "agent", "name": "ada", "in_python": [],
                              "keys": ["no-such-key"], "agents": ["ada"], "names": ["ada"],
                              # positions of no event: the changes queries answer timestamps, which
                              # fetchall cannot build here (no pytz); test_sql_history runs them on events
                              "first": 1, "last": 0,
                              # the console's search and pages (NULL filters match any)
                              "limit": 10, "offset": 0, "prefix": None, "words": [], "family": None,
                              "group": None, "lifecycle": None, "server": None, "source": None, "tier": None}


@pytest.fixture
def con(tmp_path: Path) -> Any:
    """A read model of two units, two agents, a connector bound to the parent unit and a grant."""
    settings = Settings(home=tmp_path / "home")
    catalog = open_catalog(settings)
    catalog.init(preset("spring-voyage"), META)
    catalog.register_connector("arxiv", None, ["arxiv.search", "arxiv.fetch"], META)
    catalog.create_unit("org", None, META)
    catalog.create_unit("lab", "org", META)
    catalog.create_agent("ada", "lab", "stateful", META)
    catalog.create_agent("bob", "org", "stateful", META)
    catalog.bind_connector("arxiv", "org", META)
    catalog.add_grant("agent:ada", "arxiv.search", META)
    read_model = open_read_model(settings)
    catch_up(catalog, Projector(read_model))
    catalog.close()
    yield read_model
    read_model.close()


def test_every_query_fills_its_fragments_and_runs(con: Any) -> None:
    names = [name.removesuffix(".sql") for name, _ in sql_files("sql")]
    assert "effective_set" in names and "materialized_differences" in names
    # the follower's deltas read the grants a batch noted, given as rows
    noted = [["grant_added", "unit", "org", "arxiv.*", None]]
    for name in names:
        if name in ("effective_set", "effective_at"):
            continue  # CTEs only, or an expression: run through the files that include it
        with given_notes(con, noted) as (notes, given):
            text = query(name, rows="effective_tools", notes=notes, which=TOOLS_OF_KEYS)
            assert "{{" not in text, name
            values = {**PARAMETERS, **given} if notes in text else PARAMETERS
            wanted = {key: values[key] for key in re.findall(r"\$(\w+)", text)}
            with subjects_registered(con, subjects_at(con)), registered(con, "_entries", console_index(con)):
                run(con, text, wanted)  # (the console's pages read its index as `_entries`)


def test_an_unknown_query_or_fragment_is_named(con: Any) -> None:
    with pytest.raises(KeyError, match="no_such_query"):
        query("no_such_query")


def test_the_refresh_digests_each_set_as_the_fingerprint_digests_it(con: Any) -> None:
    subjects = subjects_at(con)
    assert ("agent", "ada") in subjects and ("unit", "lab") in subjects
    with subjects_registered(con, subjects):
        per_subject = dict(run(con, query("set_digests")))
    assert len(set(per_subject.values())) > 1  # different sets, different digests
    for kind, name in subjects:
        assert per_subject[f"{kind}:{name}"] == effective_digest(con, [(kind, name)], INFINITY), (kind, name)
