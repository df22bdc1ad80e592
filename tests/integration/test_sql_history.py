"""History tables built in SQL from a batch's events (projections/sql_history.py): the rows do not depend on
how the events are cut into batches, and each upcaster the SQL relies on has a SQL twin that reads the old
stored form as the Python upcaster does."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from domain.base import Meta
from domain.registry import current_version, upcast
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from projections.catchup import catch_up
from projections.envelope import Envelope
from projections.fingerprint import fingerprint
from projections.migrate import migrate
from projections.projector import EVENT_TYPES, Projector, event_columns, event_rows
from projections.rows import FEW_ROWS, insert_columns, select_rows
from projections.schema import HISTORY_TABLES
from projections.sqlfiles import query
from projections.subjects_part import effective_at, grant_change
from tests.integration.test_effective_history import scripted_story

META = Meta(actor="tester")
TAKES_EFFECT = ("Grants.Added", "Grants.Revoked", "Unit.ConnectorBound", "Unit.ConnectorUnbound")


def later_changes(c: Any) -> list[Any]:
    """After the scripted story: changes that take effect at other times, repeated on the same keys."""
    return [
        lambda: c.add_grant("agent:a2", "web.find", META, "2027-01-01T00:00:00Z"),
        lambda: c.bind_connector("arxiv", "ops", META, "2026-11-01T08:30:00+02:00"),
        lambda: c.revoke_grant("agent:a2", "web.find", META, "2027-02-01T00:00:00Z"),
        lambda: c.add_grant("agent:a2", "web.find", META),
        lambda: c.unbind_connector("arxiv", "ops", META, "2027-03-01T00:00:00Z"),
        lambda: c.set_allowlist("a1", ["web.*"], META),
        lambda: c.declare_image("a2", "registry/a2:1", ["img.delta"], META),
    ]


def every_table(con: duckdb.DuckDBPyConnection) -> dict[str, list[dict[str, Any]]]:
    return {table: select_rows(con, f"SELECT * FROM {table} ORDER BY ALL")
            for table in (*HISTORY_TABLES, "tools", "aliases", "events")}


@pytest.fixture
def stored(sqlite_settings: Settings) -> Any:
    """Given the scripted story and the later changes, stored and not yet projected."""
    catalog = open_catalog(sqlite_settings)
    for _, command in scripted_story(catalog):
        command()
    for command in later_changes(catalog):
        command()
    yield catalog
    catalog.close()


def test_given_one_history_when_projected_in_pages_of_1_7_and_20000_then_every_table_is_the_same(
        stored: Any, sqlite_settings: Settings, tmp_path: Path) -> None:
    # when the same events are projected in three read models, each cut into batches of another size
    # (pages of 1 build each registration in SQL; one page keeps the renamed tool's in Python)
    projected = {}
    for page_size in (1, 7, 20_000):
        con = open_read_model(sqlite_settings, path=tmp_path / f"pages_{page_size}.duckdb")
        catch_up(stored, Projector(con), page_size=page_size)
        projected[page_size] = (every_table(con), fingerprint(con, deep=True))
        # and the projector leaves no working table behind for user SQL on its connection to see
        assert con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall() == []
        con.close()

    # then every table holds the same rows and the read models have one fingerprint
    tables, print_1 = projected[1]
    assert tables["grant_history"] and tables["binding_history"] and tables["allowlist_history"]
    for page_size in (7, 20_000):
        other, other_print = projected[page_size]
        for table in tables:
            assert other[table] == tables[table], f"{table} differs between pages of 1 and {page_size}"
        assert other_print == print_1


def test_given_a_binding_recorded_with_an_offset_when_projected_then_it_takes_effect_at_that_instant(
        stored: Any, sqlite_settings: Settings) -> None:
    con = open_read_model(sqlite_settings)
    catch_up(stored, Projector(con))
    rows = select_rows(con, "SELECT epoch(effective_from) AS took_effect, epoch(effective_to) AS ended "
                            "FROM binding_history WHERE unit = 'ops'")
    con.close()
    # 08:30 at +02:00 is 06:30 UTC; the unbind took effect on 1 March 2027 UTC
    assert rows == [{"took_effect": 1793514600.0, "ended": 1803859200.0}]


# --- the SQL twins of the upcasters ----------------------------------------------------------------------

def envelope(position: int, event_type: str, version: int, data: dict[str, Any]) -> Envelope:
    return Envelope(position=position, prev_position=position - 1, originator_id=f"o{position}",
                    originator_version=1, type=event_type, type_version=version,
                    recorded_at="2026-05-01T12:00:00.000000+00:00", actor="tester", reason=None, data=data,
                    prev_hash="0" * 64, hash="0" * 64)


def stored_forms() -> list[Envelope]:
    """Each event type whose effective_at the SQL reads, as version 1 stored it (no effective_at) and as
    version 2 stores it (none given, an empty one, or a time)."""
    grant = {"subject": "agent:a1", "target": "web.fetch", "tool_key": "k1"}
    bind = {"unit": "org", "slug": "arxiv"}
    forms: list[Envelope] = []
    for event_type in TAKES_EFFECT:
        data = grant if event_type.startswith("Grants.") else bind
        forms += [envelope(len(forms) + 1, event_type, 1, dict(data)),
                  envelope(len(forms) + 2, event_type, 2, {**data, "effective_at": None}),
                  envelope(len(forms) + 3, event_type, 2, {**data, "effective_at": ""}),
                  envelope(len(forms) + 4, event_type, 2, {**data, "effective_at": "2027-01-01T00:00:00.000000+00:00"})]
    return forms


def test_given_old_and_new_stored_forms_when_read_by_sql_then_effective_at_is_what_the_upcaster_gives() -> None:
    # given events of every type the twin covers, stored in version 1 and version 2, in the events table
    forms = stored_forms()
    assert {current_version(t) for t in TAKES_EFFECT} == {2}, "a new version needs its SQL twin updated"
    con = duckdb.connect()
    migrate(con)
    insert_columns(con, "events", event_columns(forms))

    # when the SQL twin reads them, and Python upcasts them
    by_sql = {row["position"]: row["moment"] for row in select_rows(
        con, f"SELECT position, {query('effective_at')} AS moment FROM (SELECT *, from_json(data, "
             "'{\"effective_at\": \"VARCHAR\"}') AS d FROM events) ORDER BY position")}
    by_python = {e.position: effective_at(upcast(e.type, e.type_version, e.data)) for e in forms}

    # then both give the same moment (or none) for every stored form
    assert by_sql == by_python
    assert sum(moment is not None for moment in by_sql.values()) == len(TAKES_EFFECT)


def test_given_every_stored_form_of_a_grant_change_when_worked_out_in_python_then_it_is_the_sql_s_row() -> None:
    # given grants added and revoked in version 1 and 2 (effective_at none, empty or a time), a pattern
    # (no tool key), an empty tool key and a subject of another UTC offset's recording, in the events table
    forms = [e for e in stored_forms() if e.type.startswith("Grants.")]
    pattern = {"subject": "unit:org", "target": "web.*", "tool_key": None, "effective_at": None}
    forms += [envelope(len(forms) + 1, "Grants.Added", 2, pattern),
              envelope(len(forms) + 2, "Grants.Revoked", 2, {**pattern, "tool_key": ""}),
              envelope(len(forms) + 3, "Grants.Added", 2, {**pattern, "subject": "agent:a:b"}).model_copy(
                  update={"recorded_at": "2026-05-01T14:30:00.123456+02:00"})]
    con = duckdb.connect()
    migrate(con)
    insert_columns(con, "events", event_columns(forms))

    # when the changes query reads them, and a follower's few are worked out in Python
    by_sql = select_rows(con, f"{query('history_grants')} ORDER BY position", {"first": 1, "last": len(forms)})
    by_python = [grant_change(e, upcast(e.type, e.type_version, e.data)) for e in forms]

    # then every change is the same row, column for column (times as instants)
    assert len(by_sql) == len(forms) == 11
    assert by_python == by_sql


def test_given_a_registration_stored_as_version_1_when_built_in_sql_then_its_tool_row_is_the_new_forms() -> None:
    # given one tool registration stored without latest_release (version 1) and one with it (version 2)
    spec = {"group": "core", "tier": "default", "visibility": "public", "source": "builtin", "classes": ["net"]}
    old = envelope(1, "Tool.Registered", 1, {"tool_id": "web.fetch", "spec": spec})
    new = envelope(2, "Tool.Registered", 2, {"tool_id": "web.fetch", "spec": spec, "latest_release": "1.0.0"})
    assert upcast(old.type, 1, old.data) == {**old.data, "latest_release": None}
    con = duckdb.connect()
    migrate(con)
    insert_columns(con, "events", event_columns([old, new]))

    # when the SQL builds their tool rows
    rows = select_rows(con, f"SELECT * EXCLUDE (tool_key, registered_position, canonical_position, "
                            f"updated_position) FROM ({query('registered_tools')}) ORDER BY registered_position",
                       {"first": 1, "last": 2, "in_python": []})

    # then the old form reads as the new one (the upcaster only adds what the rows do not hold)
    assert len(rows) == 2 and rows[0] == rows[1]
    assert rows[0]["classes"] == ["net"] and rows[0]["schema_valid"] is True


def test_given_a_follower_s_few_events_when_inserted_as_list_parameters_then_the_rows_are_those_arrow_writes() -> None:
    # given a few events of every kind of value: another offset, microseconds, a reason or none,
    # an idempotency key, data with text JSON escapes
    forms = stored_forms()
    forms[1] = forms[1].model_copy(update={
        "recorded_at": "2026-05-01T14:30:00.123456+02:00", "reason": "why", "idempotency_key": "k-1",
        "actor": "token:ops", "data": {"note": "caf\u00e9 \"q\" \\ \n", "n": 1.5}})
    few = event_rows(forms)
    assert len(forms) <= FEW_ROWS and isinstance(few, dict)
    by_lists, by_arrow = duckdb.connect(), duckdb.connect()
    for con in (by_lists, by_arrow):
        migrate(con)

    # when they are inserted as a follower's pass does (list parameters) and as a catch-up's page does (Arrow)
    insert_columns(by_lists, "events", few, EVENT_TYPES)
    insert_columns(by_arrow, "events", pa.table(event_columns(forms)))

    # then the rows are the same, to the microsecond and the byte
    def rows(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
        return select_rows(con, "SELECT * EXCLUDE (recorded_at), epoch_us(recorded_at) AS at, data::VARCHAR AS text "
                                "FROM events ORDER BY position")
    assert rows(by_lists) == rows(by_arrow)
    assert rows(by_lists)[1]["at"] == 1777638600123456  # 14:30:00.123456 at +02:00 is 12:30:00.123456 UTC
