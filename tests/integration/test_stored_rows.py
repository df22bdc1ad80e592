"""The catch-up's direct read of a SQLite store (sqlite3 + orjson) gives exactly the records the store's
own mapper gives, over stored events whose values hit every case where orjson would read differently.

Real SQLite file store; the odd values are written by the domain, or into the stored bytes as another
writer could have left them.
"""
from __future__ import annotations

import sqlite3
from contextlib import closing
from importlib.metadata import version

from domain.base import Meta
from domain.naming import preset
from domain.values import ToolSpec
from infra.settings import Settings
from infra.wiring import open_catalog
from projections.catchup import history_reader
from projections.canonical import GENESIS_HASH
from projections.envelope import chain_all
from tests.integration.test_canonical_json import DIVERGENT

META = Meta(actor="tester", reason="naïve — ünïcode 😀")

# Stored bytes another writer could have left: values orjson refuses or reads otherwise,
# and a timestamp without microseconds.
ODD_EXAMPLES = ('[NaN,Infinity,-Infinity,1e400,18446744073709551616,-9223372036854775809]')


def _write_store(settings: Settings) -> None:
    catalog = open_catalog(settings)
    try:
        catalog.init(preset("tyrum"), META)
        for index, (name, value) in enumerate(sorted(DIVERGENT.items())):
            schema = {"type": "object", "properties": {"p": {"type": "number", "default": value}},
                      "title": name, "examples": [value]}
            catalog.register_tool(f"edge.case{index}", ToolSpec(
                source="builtin", group="core", tier="default", visibility="public", input_schema=schema), META)
        catalog.register_tool("edge.odd", ToolSpec(source="builtin", group="core", tier="default",
                                                   visibility="public", input_schema={"examples": [None]}), META)
    finally:
        catalog.close()
    with closing(sqlite3.connect(settings.event_store_path)) as store:
        store.execute("UPDATE stored_events SET state = CAST(replace(CAST(state AS TEXT), "
                      "'\"examples\":[null]', ?) AS BLOB) WHERE topic = 'Tool.Registered'",
                      [f'"examples":{ODD_EXAMPLES}'])
        store.execute("""UPDATE stored_events SET state = CAST(replace(CAST(state AS TEXT),
                         substr(CAST(state AS TEXT), instr(CAST(state AS TEXT), '.'), 7), '') AS BLOB)
                         WHERE rowid = 1""")
        store.commit()


def test_given_stored_events_with_odd_values_when_read_directly_then_records_and_hashes_are_the_mappers(
        sqlite_settings: Settings) -> None:
    # given a store whose events hold every value orjson reads differently from json, or refuses
    _write_store(sqlite_settings)
    catalog = open_catalog(sqlite_settings)
    try:
        assert catalog.plain_sqlite_store() is not None
        # when the catch-up reads it directly, a page at a time
        direct = history_reader(catalog)(0, 3) + history_reader(catalog)(3, 1000)
        # then the records are those the mapper decodes, and so are the envelopes and their hashes
        mapped = catalog.history(after=0, limit=1000)
    finally:
        catalog.close()
    assert direct == mapped
    assert mapped[0].state["timestamp"].microsecond == 0
    assert chain_all(direct, 0, GENESIS_HASH) == chain_all(mapped, 0, GENESIS_HASH)
    odd = [r for r in mapped if r.topic == "Tool.Registered" and "nan" in str(r.state)]
    assert odd and any(2**64 in r.state["spec"]["input_schema"]["examples"] for r in odd)


# The version of eventsourcing whose stored format projections/stored_rows.py was checked against (the story
# above), pinned in pyproject.toml.
CHECKED_EVENTSOURCING = "9.5.6"


def test_the_installed_eventsourcing_is_the_one_whose_stored_format_was_checked() -> None:
    # stored_rows.py reads the store's rows itself: a new version may lay them out otherwise. Run the story
    # above against it (and read its changelog for the SQLite recorder and the JSON transcoder), then move
    # the pin here and in pyproject.toml.
    assert version("eventsourcing") == CHECKED_EVENTSOURCING
