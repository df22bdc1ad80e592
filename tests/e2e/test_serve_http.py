"""End to end: `toolcat serve` on the bundled example story, one real server process for the module, asked
over HTTP as a service would: every read endpoint answers the command line's document, writes are the
command line's writes, errors are problem+json with the stable codes, and the HTTP extras (ETag, 304,
deprecation headers, 410, min_position, limits) hold.
"""
from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from contextlib import closing
from typing import Any

import duckdb
import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from infra.cli import run
from infra.reply import REPLY_MEDIA_TYPE
from domain.commands import WRITES
from domain.taxonomy import SOURCES
from infra.read_routes import READ_ROUTES
from infra.settings import Settings
from tests.serving import Served, serving, tokens
from projections.tracking import read_tracking
from tests.support import SCRIPT, ok, run_in_process, toolcat_environ, toolcat_in_process

DEPRECATED, RETIRED = "mcp.memory.write", "mcp.memory.search"
SQL_TIMEOUT = 3
# The read commands every endpoint is checked against: argv → (path, query).
READS = {
    ("tool", "list", "--limit", "3"): ("/v1/tools", {"limit": 3}),
    ("tool", "show", DEPRECATED): (f"/v1/tools/{DEPRECATED}", {}),
    ("resolve", "tool.fs.read"): ("/v1/resolve/tool.fs.read", {}),
    ("effective", "agent:triage"): ("/v1/subjects/agent:triage/effective", {}),
    ("effective", "agent:triage", "--at", "192"): ("/v1/subjects/agent:triage/effective", {"at": 192}),
    ("effective", "unit:eng", "--as-of", "2999-01-01T00:00:00Z"):
        ("/v1/subjects/unit:eng/effective", {"as_of": "2999-01-01T00:00:00Z"}),
    ("explain", "agent:triage", "read"): ("/v1/subjects/agent:triage/explain/read", {}),
    ("audit", "alias", RETIRED): (f"/v1/audit/aliases/{RETIRED}", {}),
    ("audit", "fingerprint", "--at", "50"): ("/v1/audit/fingerprint", {"at": 50}),
    ("audit", "verify"): ("/v1/audit/verify", {}),
    ("route", "check", "agent:triage", "--call", "tool.http.fetch", "--after", "tool.location.get"):
        ("/v1/subjects/agent:triage/route-check", {"call": "tool.http.fetch", "after": ["tool.location.get"]}),
    ("route", "node", "tool.desktop.screenshot", "--lane", "main"):
        ("/v1/route/node/tool.desktop.screenshot", {"lane": "main"}),
    ("who-can", "read"): ("/v1/tools/read/who-can", {}),
    ("who-can", "tool.fs.read", "--at", "150"): ("/v1/tools/tool.fs.read/who-can", {"at": 150}),
}


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[tuple[str, ...], Any]]:
    """The example story in a home with tokens, and the documents the command line answers without a server."""
    home = tmp_path_factory.mktemp("served") / "home"
    run_in_process(home, SCRIPT)
    with toolcat_environ("tester"):
        answers = {argv: run(list(argv), Settings(home=home)).document for argv in READS}
    return home, answers


@pytest.fixture(scope="module")
def keys(story: tuple[Path, Any]) -> dict[str, str]:
    return tokens(story[0], admin="read,write,audit", reader="read", writer="write")


@pytest.fixture(scope="module")
def served(story: tuple[Path, Any], keys: dict[str, str]) -> Iterator[Served]:
    with serving(story[0], env={"TOOLCAT_SQL_TIMEOUT_SECONDS": str(SQL_TIMEOUT)}) as server:
        yield server


@pytest.fixture(scope="module")
def admin(served: Served, keys: dict[str, str]) -> Iterator[httpx.Client]:
    with served.client(keys["admin"]) as client:
        yield client


def problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == status and body["code"] == code, body
    assert body["title"] and body["detail"] and isinstance(body["details"], dict)
    return body


def write(client: httpx.Client, path: str, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    response = client.post(path, json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def test_every_read_endpoint_answers_the_command_lines_document(story: Any, admin: httpx.Client) -> None:
    _, answers = story
    for argv, (path, query) in READS.items():
        response = admin.get(path, params=query)
        assert response.status_code == 200, (argv, response.text)
        assert response.headers["content-type"] == "application/json"
        assert response.json() == answers[argv], argv


def test_tools_page_with_cursors_through_the_whole_catalog(admin: httpx.Client) -> None:
    everything = admin.get("/v1/tools", params={"limit": 1000}).json()["tools"]
    paged, cursor = [], None
    while True:
        page = admin.get("/v1/tools", params={"limit": 4, **({"cursor": cursor} if cursor else {})}).json()
        paged += page["tools"]
        if (cursor := page["next_cursor"]) is None:
            break
    assert paged == everything and len(everything) > 8
    problem(admin.get("/v1/tools", params={"cursor": "garbage"}), 400, "usage")
    problem(admin.get("/v1/tools", params={"group": "nonsense"}), 400, "usage")


def test_a_deprecated_alias_answers_the_canonical_tool_with_deprecation_link_and_sunset(
        served: Served, admin: httpx.Client) -> None:
    shown = admin.get(f"/v1/tools/{DEPRECATED}")
    assert shown.status_code == 200 and shown.json()["canonical_id"] == "memory.write"
    deprecated_at = admin.post("/v1/sql", json={"query": "SELECT floor(epoch(e.recorded_at))::BIGINT AS t FROM aliases a "
                                                         f"JOIN events e ON e.position = a.deprecated_position "
                                                         f"WHERE a.alias = '{DEPRECATED}'"}).json()[0]["t"]
    assert shown.headers["Deprecation"] == f"@{deprecated_at}"
    # relative (never built from the request's Host): a client resolves it against the URL it asked
    assert shown.headers["Link"] == '</v1/tools/memory.write>; rel="successor-version"'
    assert "Sunset" not in shown.headers  # no removal release is known yet

    for milestone in ("canonical_shipped", "docs_shipped", "data_rewrite_shipped"):
        write(admin, "/v1/alias/milestone", {"alias": DEPRECATED, "milestone": milestone, "release": "1.3.0"})
    write(admin, "/v1/release/plan", {"version": "1.4.0", "date": "2027-06-01"})
    for path in (f"/v1/tools/{DEPRECATED}", f"/v1/resolve/{DEPRECATED}"):
        answer = admin.get(path)
        assert answer.status_code == 200
        assert answer.headers["Sunset"] == "Tue, 01 Jun 2027 00:00:00 GMT"
        assert answer.headers["Deprecation"] == f"@{deprecated_at}"
    assert admin.get(f"/v1/resolve/{DEPRECATED}").json()["lifecycle"] == "deprecated"
    for canonical in ("/v1/tools/memory.write", "/v1/resolve/tool.fs.read"):
        assert not {"Deprecation", "Sunset", "Link"} & set(admin.get(canonical).headers)


def test_a_retired_id_is_gone_with_its_canonical_id(admin: httpx.Client) -> None:
    for path in (f"/v1/tools/{RETIRED}", f"/v1/resolve/{RETIRED}"):
        body = problem(admin.get(path), 410, "retired_alias")
        assert body["details"]["canonical_id"] == "memory.search"
    problem(admin.get("/v1/tools/no.such.tool"), 404, "unknown_tool")
    problem(admin.get("/v1/subjects/agent:nobody/effective"), 404, "unknown_subject")


def test_the_effective_set_carries_its_last_change_as_etag_and_answers_304_until_it_changes(
        admin: httpx.Client) -> None:
    first = admin.get("/v1/subjects/agent:triage/effective")
    etag = first.headers["ETag"]
    assert etag == f'"{first.json()["position"]}"'
    assert first.json()["position"] <= first.json()["read_model_position"]
    unchanged = admin.get("/v1/subjects/agent:triage/effective", headers={"If-None-Match": etag})
    assert unchanged.status_code == 304 and unchanged.content == b"" and unchanged.headers["ETag"] == etag
    # an unrelated write moves the read model, not the agent's ETag (and the command line agrees)
    created = write(admin, "/v1/unit/create", {"unit": "etag-moves"})["position"]
    still = admin.get("/v1/subjects/agent:triage/effective", headers={"If-None-Match": etag})
    assert still.status_code == 304 and still.headers["ETag"] == etag
    after = admin.get("/v1/subjects/agent:triage/effective").json()
    assert after["read_model_position"] >= created > after["position"] == first.json()["position"]
    # a change of its own set moves it, to that change's position
    granted = write(admin, "/v1/grant/add", {"subject": "agent:triage", "target": "acme.ticket.open"})["position"]
    moved = admin.get("/v1/subjects/agent:triage/effective", headers={"If-None-Match": etag})
    assert moved.status_code == 200 and moved.headers["ETag"] == f'"{granted}"' == f'"{moved.json()["position"]}"'
    write(admin, "/v1/grant/revoke", {"subject": "agent:triage", "target": "acme.ticket.open"})


def test_min_position_waits_then_answers_503_with_retry_after(admin: httpx.Client) -> None:
    head = admin.get("/v1/health").json()["position"]
    fresh = admin.get("/v1/subjects/agent:triage/effective", params={"min_position": head, "timeout": 5})
    assert fresh.status_code == 200 and fresh.json()["position"] >= head
    late = admin.get("/v1/subjects/agent:triage/effective", params={"min_position": head + 1000, "timeout": 0.3})
    body = problem(late, 503, "unavailable")
    assert late.headers["Retry-After"] == "1" and body["details"]["wanted"] == head + 1000


def test_writes_are_the_command_lines_with_the_tokens_name_as_actor(admin: httpx.Client) -> None:
    answer = write(admin, "/v1/grant/add", {"subject": "agent:triage", "target": "grep", "reason": "over http"})
    assert [e["type"] for e in answer["events"]][-1] == "Grants.Added"
    recorded = admin.post("/v1/sql", json={"query": "SELECT actor, reason FROM events WHERE position = "
                                                    f"{answer['position']}"}).json()
    assert recorded == [{"actor": "admin", "reason": "over http"}]
    body = problem(admin.post("/v1/grant/revoke", json={"subject": "agent:triage", "target": "grep",
                                                         "actor": "mallory"}), 400, "usage")
    assert "token" in body["detail"]
    visible = admin.get("/v1/subjects/agent:triage/effective", params={"min_position": answer["position"]})
    assert visible.status_code == 200 and visible.json()["position"] >= answer["position"]


def test_an_idempotency_key_replays_the_first_answer_and_refuses_another_command(admin: httpx.Client) -> None:
    first = write(admin, "/v1/unit/create", {"unit": "keyed"}, **{"Idempotency-Key": "http-key-1"})
    again = write(admin, "/v1/unit/create", {"unit": "keyed"}, **{"Idempotency-Key": "http-key-1"})
    assert again == first and first["events"][0]["type"] == "IdempotencyKey.Used"
    problem(admin.post("/v1/unit/create", json={"unit": "other"}, headers={"Idempotency-Key": "http-key-1"}),
            409, "idempotency_key_reused")
    assert admin.get("/v1/events", params={"idempotency_key": "http-key-1"}).json() == first


def test_write_errors_are_problems_with_the_stable_codes(admin: httpx.Client) -> None:
    problem(admin.post("/v1/grant/add", json={"subject": "agent:nobody", "target": "read"}), 404, "unknown_subject")
    problem(admin.post("/v1/tool/register", json={"id": "memory.peek", "source": "plugin", "plugin": "acme",
                                                   "group": "extension", "tier": "advanced",
                                                   "visibility": "public"}), 422, "reserved_prefix")
    problem(admin.post("/v1/tool/register", json={"id": "x.y", "source": "nowhere"}), 400, "usage")
    problem(admin.post("/v1/grant/add", json={"subject": "agent:triage"}), 400, "usage")
    problem(admin.post("/v1/release/plan", json={"version": "9.0.0", "date": "next week"}), 400, "usage")
    problem(admin.post("/v1/release/plan", json={"version": "1.0.0", "date": "2027-01-01"}), 422, "release_order")
    problem(admin.post("/v1/alias/retire", json={"alias": DEPRECATED, "release": "1.3.0"}), 422, "window_open")
    problem(admin.post("/v1/tool/register", json={"id": "acme.x", "source": "plugin", "plugin": "acme",
                                                   "group": "extension", "tier": "advanced", "visibility": "public",
                                                   "schema": "/etc/passwd"}), 400, "usage")
    problem(admin.get("/v1/no/such/thing"), 404, "not_found")


def test_arch_21s_exposure_selectors_are_refused_with_the_command_lines_code_never_ignored(
        admin: httpx.Client) -> None:
    """Seed rule 24: ARCH-21 reserves execution_profile and conversation_kind; the catalog has neither, so an
    inventory read given one answers 422 unsupported_selector, as the command line exits 3 with it."""
    inventory = ["/v1/subjects/agent:triage/effective", "/v1/subjects/agent:triage/explain/read", "/v1/tools",
                 "/v1/tools/read/who-can", "/v1/subjects/agent:triage/watch"]
    for path in inventory:
        for selector in ("execution_profile", "conversation_kind", "conversation_id", "turn_id"):
            body = problem(admin.get(path, params={selector: "coding"}), 422, "unsupported_selector")
            assert body["details"]["selector"] == selector, path
    assert admin.get(inventory[0]).status_code == 200


def test_a_unit_runs_an_image_over_http_and_an_agents_body_is_taken_as_before(admin: httpx.Client) -> None:
    """Seed rule 23: `subject` names the unit or agent running the image; a body naming `agent` (the field's
    name before units ran images) is still an agent's declaration."""
    image = {"image": "shelf/librarian:1.1", "tools": ["shelf.cite"]}
    declared = write(admin, "/v1/image/declare", {"subject": "unit:eng", **image})
    assert declared["events"][-1]["type"] == "Unit.ImageDeclared"
    rows = admin.get("/v1/subjects/unit:eng/effective", params={"min_position": declared["position"]}).json()["tools"]
    assert {"tool_id": "shelf.cite", "provenance": "image"}.items() <= next(
        row for row in rows if row["tool_id"] == "shelf.cite").items()
    assert write(admin, "/v1/image/declare", {"agent": "triage", **image})["events"][-1]["type"] == \
        "Agent.ImageDeclared"
    problem(admin.post("/v1/image/declare", json={"subject": "unit:nowhere", **image}), 404, "unknown_subject")


def test_a_secret_reference_over_http_takes_no_value_and_never_repeats_one(admin: httpx.Client) -> None:
    value = "ghp_Pl4nt3dOverHttp77"
    refused = admin.post("/v1/secret/ref/add", json={"ref": "deploy-key", "value": value,
                                                    "allow_tools": ["tool.secret.copy-to-node-clipboard"]})
    problem(refused, 400, "usage")
    problem(admin.post("/v1/secret/ref/add", json={"ref": value, "allow_tools": ["tool.desktop.act"]}), 422,
            "secret_value_refused")
    assert value not in refused.text
    added = write(admin, "/v1/secret/ref/add", {"ref": "deploy-key", "allow_tools": ["tool.secret.copy-to-node-clipboard"]})
    assert [e["type"] for e in added["events"]] == ["SecretRef.Added"]


def test_a_schema_is_given_inline_over_http(admin: httpx.Client) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    write(admin, "/v1/tool/register", {"id": "acme.inline", "source": "plugin", "plugin": "acme",
                                       "group": "extension", "tier": "advanced", "visibility": "public",
                                       "schema": schema, "classes": ["source:sensitive"]})
    shown = admin.get("/v1/tools/acme.inline").json()
    assert shown["schema_valid"] is True and shown["classes"] == ["source:sensitive"]


def test_a_schema_update_over_http_is_the_command_lines_with_its_refusal(admin: httpx.Client) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    write(admin, "/v1/tool/register", {"id": "acme.versioned", "source": "plugin", "plugin": "acme",
                                       "group": "extension", "tier": "advanced", "visibility": "public",
                                       "schema": schema})
    assert write(admin, "/v1/catalog/compatibility", {"mode": "backward"})["events"] == []  # the default
    body = problem(admin.post("/v1/tool/update", json={"id": "acme.versioned", "schema": {**schema, "required": ["q"]}}),
                   422, "incompatible_schema")
    assert "q: newly required property" in body["detail"]
    added = {**schema, "properties": {**schema["properties"], "limit": {"type": "integer"}}}
    updated = write(admin, "/v1/tool/update", {"id": "acme.versioned", "schema": added})
    assert [e["type"] for e in updated["events"]] == ["Tool.SchemaUpdated"]
    shown = admin.get("/v1/tools/acme.versioned", params={"min_position": updated["position"]}).json()
    assert (shown["schema_version"], shown["input_schema"]) == (2, added)


def test_tokens_and_scopes_decide_who_may_do_what(served: Served, keys: dict[str, str]) -> None:
    with served.client() as anonymous, served.client("tc_not-a-token") as stranger, \
            served.client(keys["reader"]) as reader, served.client(keys["writer"]) as writer:
        problem(anonymous.get("/v1/tools"), 401, "unauthenticated")
        assert anonymous.get("/v1/tools").headers["WWW-Authenticate"].startswith("Bearer")
        problem(stranger.get("/v1/tools"), 401, "unauthenticated")
        assert reader.get("/v1/tools").status_code == 200
        problem(reader.post("/v1/unit/create", json={"unit": "nope"}), 403, "forbidden")
        problem(reader.get("/v1/audit/verify"), 403, "forbidden")
        problem(writer.get("/v1/tools"), 403, "forbidden")
        assert writer.post("/v1/unit/create", json={"unit": "by-writer"}).status_code == 200
        for open_path in ("/v1/health", "/v1/ready", "/metrics", "/openapi.json"):
            # /v1/ready may be 503 right after a write: not caught up is not unauthenticated.
            assert anonymous.get(open_path).status_code in (200, 503), open_path


def test_sql_answers_rows_and_refuses_anything_but_reading(admin: httpx.Client) -> None:
    rows = admin.post("/v1/sql", json={"query": "SELECT count(*) AS n FROM tools"})
    assert rows.status_code == 200 and rows.json()[0]["n"] > 8
    assert rows.headers["toolcat-truncated"] == "false"
    problem(admin.post("/v1/sql", json={"query": "DROP TABLE events"}), 422, "sql_refused")
    problem(admin.post("/v1/sql", json={"query": "SELECT * FROM read_csv('/etc/passwd')"}), 422, "sql_refused")
    problem(admin.post("/v1/sql", json={"query": "SELECT * FROM no_such_table"}), 400, "sql_error")
    assert admin.post("/v1/sql", json={"query": "SELECT 1 AS one"}).json() == [{"one": 1}]


QUERY = {"query": "SELECT tool_key, canonical_id, input_schema FROM tools ORDER BY canonical_id"}


def test_sql_answers_csv_arrow_or_parquet_as_accept_asks(admin: httpx.Client) -> None:
    # Given the rows as JSON
    expected = admin.post("/v1/sql", json=QUERY).json()
    ids = [row["canonical_id"] for row in expected]
    # When the same query asks for CSV, an Arrow IPC stream and Parquet
    answers = {kind: admin.post("/v1/sql", json=QUERY, headers={"Accept": kind})
               for kind in ("text/csv", "application/vnd.apache.arrow.stream", "application/vnd.apache.parquet")}
    # Then each is that media type holding the same rows
    for kind, answer in answers.items():
        assert answer.status_code == 200 and answer.headers["content-type"].startswith(kind), (kind, answer.text)
    assert [row["canonical_id"] for row in csv.DictReader(io.StringIO(answers["text/csv"].text))] == ids
    streamed = pa.ipc.open_stream(answers["application/vnd.apache.arrow.stream"].content).read_all()
    assert streamed.column("canonical_id").to_pylist() == ids
    parquet = pq.read_table(io.BytesIO(answers["application/vnd.apache.parquet"].content))
    assert parquet.column("canonical_id").to_pylist() == ids
    # And a weighted Accept picks the type it prefers; one we do not write is refused with 406
    weighted = admin.post("/v1/sql", json=QUERY, headers={"Accept": "application/xml;q=0.9, text/csv"})
    assert weighted.headers["content-type"].startswith("text/csv")
    problem(admin.post("/v1/sql", json=QUERY, headers={"Accept": "application/xml"}), 406, "not_acceptable")


def test_sql_stops_at_the_row_limit_and_says_so(admin: httpx.Client) -> None:
    # When a query matches more rows than the limit (TOOLCAT_SQL_ROW_LIMIT, 100,000 by default)
    answer = admin.post("/v1/sql", json={"query": "SELECT range AS n FROM range(250000)"},
                        headers={"Accept": "application/vnd.apache.arrow.stream"})
    # Then the answer holds the first 100,000 and its headers say it was cut short
    assert answer.headers["toolcat-row-limit"] == "100000" and answer.headers["toolcat-truncated"] == "true"
    assert pa.ipc.open_stream(answer.content).read_all().num_rows == 100_000
    assert answer.headers["toolcat-cut-by"] == "rows"


def test_sql_stops_at_the_byte_limit_and_says_so(admin: httpx.Client) -> None:
    # When a few huge values would make an answer of 400 MB (TOOLCAT_SQL_MAX_BYTES is 64 MiB by default)
    answer = admin.post("/v1/sql", json={"query": "SELECT repeat('x', 1000000) AS big FROM range(400)"})
    # Then the answer holds the first values that fit, and its headers say the bytes cut it short
    assert answer.status_code == 200, answer.text
    assert answer.headers["toolcat-truncated"] == "true" and answer.headers["toolcat-cut-by"] == "bytes"
    assert answer.headers["toolcat-byte-limit"] == str(64 * 1024 * 1024)
    assert 0 < len(answer.json()) <= 64 * 1024 * 1024 // 1_000_000 and len(answer.content) < 70 * 1024 * 1024


def test_sql_stops_a_query_running_past_the_statement_timeout(admin: httpx.Client) -> None:
    # Given the server's statement timeout (TOOLCAT_SQL_TIMEOUT_SECONDS, SQL_TIMEOUT here)
    endless = "SELECT sum(a.range * b.range) FROM range(1000000000) a, range(1000000000) b"
    # When a query would run for hours, it is stopped and answered as a rule refusal
    body = problem(admin.post("/v1/sql", json={"query": endless}), 422, "sql_timeout")
    assert body["details"]["timeout_seconds"] == SQL_TIMEOUT
    # And the server still answers the next query
    assert admin.post("/v1/sql", json={"query": "SELECT 1 AS one"}).json() == [{"one": 1}]


def test_snapshot_duckdb_is_published_for_outside_duckdb_clients(served: Served, admin: httpx.Client) -> None:
    # Given a write the server has applied
    written = write(admin, "/v1/unit/create", {"unit": "snapshotted"})
    # When a client asks for a snapshot
    published = admin.post("/v1/snapshot").json()
    # Then snapshot.duckdb in the home holds that write, and a DuckDB client opens it read-only beside the server
    assert published == {"position": published["position"], "path": str(served.home / "snapshot.duckdb")}
    assert published["position"] >= written["position"]
    with closing(duckdb.connect(published["path"], read_only=True)) as con:
        assert read_tracking(con).position == published["position"]
        assert con.execute("SELECT count(*) FROM events").fetchone()[0] == published["position"]
    # And the metrics say what the snapshot lags behind
    assert "toolcat_snapshot_lag_events" in admin.get("/metrics").text


def test_export_through_a_server_reads_a_snapshot_it_asks_for(served: Served, admin: httpx.Client,
                                                               tmp_path: Path) -> None:
    # Given a write newer than any snapshot
    written = write(admin, "/v1/unit/create", {"unit": "exported"})
    # When `toolcat export` runs on the served home
    with toolcat_environ("exporter"):
        exported = toolcat_in_process(served.home, "export", "--format", "parquet", str(tmp_path / "out"), "--json")
    # Then the server published a snapshot holding the write, and the export read it
    document = ok(exported)
    assert (document["source"], document["position"]) == ("snapshot", written["position"])
    assert (tmp_path / "out" / "events.parquet").exists() and (tmp_path / "out" / "schema.sql").exists()


def test_the_web_page_is_served_at_the_root(admin: httpx.Client, served: Served) -> None:
    page = admin.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert DEPRECATED in page.text and "agent:triage" in page.text
    assert admin.get("/subjects/agent:triage").status_code == 200
    with served.client() as anonymous_with_tokens_configured:
        assert anonymous_with_tokens_configured.get("/").status_code == 401


def test_the_audit_report_is_html_or_json(admin: httpx.Client) -> None:
    page = admin.get("/v1/audit/report")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<svg" in page.text and RETIRED in page.text
    report = admin.get("/v1/audit/report", params={"alias": RETIRED, "format": "json"}).json()
    assert [a["alias"] for a in report["aliases"]] == [RETIRED]
    problem(admin.get("/v1/audit/report", params={"alias": "no.such.alias"}), 404, "unknown_tool")
    replay = admin.get("/v1/audit/replay").json()
    assert replay["matches"] is True


def test_the_command_lines_client_gets_the_whole_reply(admin: httpx.Client) -> None:
    answer = admin.get("/v1/resolve/tool.fs.read", headers={"Accept": REPLY_MEDIA_TYPE})
    assert answer.headers["content-type"] == REPLY_MEDIA_TYPE
    assert answer.json() == {"document": {"input": "tool.fs.read", "canonical_id": "read", "lifecycle": "alias",
                                          "shim": True},
                             "human": ["tool.fs.read → read [alias (shim)]"], "exit_code": 0}


def test_operators_see_health_readiness_and_metrics(admin: httpx.Client) -> None:
    health = admin.get("/v1/health").json()
    assert health["status"] == "ok" and health["position"] == health["store_head"] > 0
    ready = admin.get("/v1/ready")
    # caught up: ready, and no stored event left to apply (lag counts them while catching up: 503)
    assert ready.status_code == 200 and ready.json()["lag"] == 0
    assert ready.json()["position"] == ready.json()["store_head"]
    admin.get("/v1/subjects/agent:triage/effective")
    metrics = admin.get("/metrics").text
    for name in ("toolcat_projection_lag_events 0.0", "toolcat_projection_lag_seconds 0.0",
                 "toolcat_batch_duration_seconds_count", "toolcat_events_applied_total",
                 "toolcat_events_per_second",
                 'toolcat_http_request_duration_seconds_count{method="GET",route="/v1/subjects/{subject}/effective"'):
        assert name in metrics, name


def test_the_openapi_document_describes_every_read_and_write(admin: httpx.Client) -> None:
    document = admin.get("/openapi.json").json()
    paths = document["paths"]
    for method, path in READ_ROUTES.values():
        assert method.lower() in paths[path], path
    for command in WRITES:
        operation = paths["/v1/" + command.replace(" ", "/")]["post"]
        assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        answer = {"plan": "PlanAnswer", "mcp sync": "McpSyncAnswer"}.get(command, "WriteAnswer")
        assert "422" in operation["responses"] and answer in json.dumps(operation["responses"]["200"])
    schemas = document["components"]["schemas"]
    assert {"ToolDescriptor", "EffectiveSet", "Problem", "GrantAddBody"} <= set(schemas)
    assert set(schemas["GrantAddBody"]["required"]) == {"subject", "target"}
    assert "actor" not in schemas["GrantAddBody"]["properties"]
    # A body is the command itself: its choices, and the manifest's own schema, are in the document.
    assert schemas["ToolRegisterBody"]["properties"]["source"]["enum"] == list(SOURCES)
    assert schemas["PlanBody"]["properties"]["manifest"]["$ref"] == "#/components/schemas/Manifest"
    assert not [name for name in schemas if "__" in name]  # no two bodies of one name
    assert "bearer" in json.dumps(document["components"]["securitySchemes"]).lower()


def test_request_bodies_and_query_strings_have_limits(admin: httpx.Client) -> None:
    huge = admin.post("/v1/sql", content=b'{"query": "' + b"x" * 2_000_000 + b'"}',
                      headers={"content-type": "application/json"})
    assert huge.status_code == 413 and huge.json()["code"] == "too_large"
    long = admin.get("/v1/tools", params={"family": "f" * 10_000})
    assert long.status_code == 414 and long.json()["code"] == "too_large"



# -- watch: Server-Sent Events ---------------------------------------------------------------------------
class Stream:
    """The events of one SSE response, read as they come."""

    def __init__(self, response: httpx.Response) -> None:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        self.lines = response.iter_lines()
        self.caught_up: int | None = None  # the position of the `caught-up` event, once it came

    def event(self) -> tuple[str, dict[str, Any]]:
        """The next event: (its name, its data)."""
        fields: dict[str, str] = {}
        for line in self.lines:
            if not line:
                if "data" in fields:
                    data = json.loads(fields["data"])
                    assert int(fields["id"]) == data["position"]
                    return fields["event"], data
                continue
            if not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = value.strip()
        raise AssertionError("the stream ended")

    def next(self) -> tuple[int, list[dict[str, Any]]]:
        """The next `changes` event: (position, changes); a `caught-up` event on the way is noted."""
        while True:
            name, data = self.event()
            if name == "caught-up":
                assert self.caught_up is None, "caught-up is sent once"
                self.caught_up = data["position"]
                continue
            assert name == "changes"
            return data["position"], data["changes"]


def grant_plugin_tool(admin: httpx.Client, tool_id: str, subject: str = "agent:triage") -> int:
    write(admin, "/v1/tool/register", {"id": tool_id, "source": "plugin", "plugin": "acme", "group": "extension",
                                       "tier": "advanced", "visibility": "public"})
    return write(admin, "/v1/grant/add", {"subject": subject, "target": tool_id})["position"]


def changed(changes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(c["change"], c["tool_id"]) for c in changes]


def test_watch_resumes_after_a_dropped_connection_missing_nothing_and_repeating_nothing(
        served: Served, keys: dict[str, str], admin: httpx.Client) -> None:
    path = "/v1/subjects/agent:triage/watch"
    current = admin.get("/v1/subjects/agent:triage/effective").json()
    with served.client(keys["reader"]) as watcher, watcher.stream("GET", path) as response:
        stream = Stream(response)
        position, changes = stream.next()
        assert position == current["position"]
        assert [c["row"] for c in changes] == current["tools"] and {c["change"] for c in changes} == {"added"}
        granted = grant_plugin_tool(admin, "acme.watch-one")
        position, changes = stream.next()
        assert (position, changed(changes)) == (granted, [("added", "acme.watch-one")])
    # Dropped. Two changes happen while nobody listens.
    grant_plugin_tool(admin, "acme.watch-two")
    revoked = write(admin, "/v1/grant/revoke", {"subject": "agent:triage", "target": "acme.watch-one"})["position"]
    with served.client(keys["reader"]) as watcher, \
            watcher.stream("GET", path, headers={"Last-Event-ID": str(granted)}) as response:
        stream = Stream(response)
        # The two writes arrive as one merged change or as two, depending on the server's batches.
        position, missed = 0, []
        while position < revoked:
            position, changes = stream.next()
            missed += changed(changes)
        assert sorted(missed) == [("added", "acme.watch-two"), ("removed", "acme.watch-one")]
        last = write(admin, "/v1/grant/revoke", {"subject": "agent:triage", "target": "acme.watch-two"})["position"]
        position, changes = stream.next()
        assert (position, changed(changes)) == (last, [("removed", "acme.watch-two")])
    problem(admin.get("/v1/subjects/agent:nobody/watch"), 404, "unknown_subject")
    problem(admin.get(path, headers={"Last-Event-ID": "yesterday"}), 400, "usage")


def test_an_empty_set_is_sent_at_once_then_caught_up_and_a_future_position_is_refused(
        served: Served, keys: dict[str, str], admin: httpx.Client) -> None:
    # Given an agent whose set is empty
    write(admin, "/v1/unit/create", {"unit": "idle-home"})
    created = write(admin, "/v1/agent/create", {"agent": "idle", "unit": "idle-home"})["position"]
    path = "/v1/subjects/agent:idle/watch"
    # When a client opens its watch, then the first event is the empty set, then caught-up: the copy is complete
    with served.client(keys["reader"]) as watcher, watcher.stream("GET", path) as response:
        stream = Stream(response)
        assert stream.event() == ("changes", {"subject": "agent:idle", "position": created, "changes": []})
        name, data = stream.event()
        assert name == "caught-up" and data["position"] >= created
    # and a resume from a position this server never sent is refused with its head
    head = admin.get("/v1/health").json()["position"]
    refused = problem(admin.get(path, headers={"Last-Event-ID": str(head + 1000)}), 409, "conflict")
    assert str(head) in refused["detail"]


def test_a_watch_opened_right_after_its_subject_was_created_finds_it(served: Served, keys: dict[str, str],
                                                                      admin: httpx.Client) -> None:
    # Given a unit whose creation was just answered
    write(admin, "/v1/unit/create", {"unit": "watched-at-once"})
    # When a client opens its watch stream at once, the stream starts (it waits for the write to apply)
    with served.client(keys["reader"]) as watcher, \
            watcher.stream("GET", "/v1/subjects/unit:watched-at-once/watch") as response:
        assert response.status_code == 200
        granted = grant_plugin_tool(admin, "acme.watch-at-once", "unit:watched-at-once")
        # And it starts with the set, empty, then its first change is that grant
        stream = Stream(response)
        assert stream.next()[1] == []
        position, changes = stream.next()
        assert (position, changed(changes)) == (granted, [("added", "acme.watch-at-once")])


def test_a_watch_passes_over_other_subjects_changes_and_gets_its_agents_change_through_its_unit(
        served: Served, keys: dict[str, str], admin: httpx.Client) -> None:
    # Given an agent of a unit, watched, and another unit
    write(admin, "/v1/unit/create", {"unit": "watch-home"})
    write(admin, "/v1/agent/create", {"agent": "watch-member", "unit": "watch-home"})
    write(admin, "/v1/unit/create", {"unit": "watch-elsewhere"})
    with served.client(keys["reader"]) as watcher, \
            watcher.stream("GET", "/v1/subjects/agent:watch-member/watch") as response:
        stream = Stream(response)  # the agent's set is empty: the stream starts with it, no changes
        assert stream.next()[1] == []
        # When the other unit changes in several batches, then the agent's unit
        for index in range(3):
            grant_plugin_tool(admin, f"acme.watch-elsewhere-{index}", "unit:watch-elsewhere")
        inherited = grant_plugin_tool(admin, "acme.watch-inherited", "unit:watch-home")
        # Then the stream's next change is the agent's, inherited from its unit, at that grant's position
        position, changes = stream.next()
        assert (position, changed(changes)) == (inherited, [("added", "acme.watch-inherited")])


# -- the command line on a served home ---------------------------------------------------------------
def test_the_command_line_reads_through_the_server_and_never_opens_the_file(
        served: Served, admin: httpx.Client, tmp_path: Path) -> None:
    from tests.support import error_of, ok, run_toolcat, toolcat_env
    # Were the command line to open the read model the server holds, it would give up within a second.
    env = toolcat_env("cli", {"TOOLCAT_HOME": str(served.home), "TOOLCAT_DUCKDB_LOCK_WAIT_SECONDS": "1"})

    def toolcat(*args: str) -> Any:
        return run_toolcat(*args, env=env, timeout=120)

    for argv in (("tool", "show", DEPRECATED), ("effective", "agent:triage", "--at", "192"), ("audit", "verify")):
        path, query = READS[argv]
        assert ok(toolcat(*argv)) == admin.get(path, params=query).json(), argv
    written = ok(toolcat("grant", "add", "agent:triage", "acme.ticket.open", "--idempotency-key", "cli-1"))
    seen = ok(toolcat("effective", "agent:triage"))  # a read sees every write that finished before it
    assert seen["position"] >= written["position"]
    assert "acme.ticket.open" in [t["tool_id"] for t in seen["tools"]]
    assert ok(toolcat("grant", "add", "agent:triage", "acme.ticket.open", "--idempotency-key", "cli-1")) == written
    assert ok(toolcat("sql", "SELECT actor FROM events WHERE position = " + str(written["position"]))) == \
        [{"actor": "cli"}]
    assert error_of(toolcat("resolve", RETIRED))["details"]["canonical_id"] == "memory.search"
    assert toolcat("resolve", RETIRED).code == 3
    assert error_of(toolcat("project"))["code"] == "conflict"
    sealed = ok(toolcat("audit", "seal"))["seal"]
    assert ok(toolcat("audit", "verify", "--expect-head", sealed["head"]))["compared"]["expected_head"]
    assert toolcat("audit", "verify", "--expect-head", "ab" * 32).code == 5  # the server checks the kept head
    report = ok(toolcat("audit", "report", "--format", "json", "-o", str(tmp_path / "report.json")))
    assert report["aliases"] == len(json.loads((tmp_path / "report.json").read_text())["aliases"]) > 0
    plain = run_toolcat("resolve", "tool.fs.read", env=env, timeout=120, json_output=False)
    assert plain.code == 0 and plain.stdout.strip() == "tool.fs.read → read [alias (shim)]"


# -- the OpenAPI document tells the truth; 405 and HEAD (issue 28, finding 10) ----------------------------
def test_the_openapi_document_states_errors_headers_and_scopes_as_sent(admin: httpx.Client) -> None:
    document = admin.get("/openapi.json").json()
    # Given the document, no answer is FastAPI's default 422 HTTPValidationError: errors are problem+json
    assert "HTTPValidationError" not in json.dumps(document)
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, answer in operation["responses"].items():
                if int(status) >= 400 and path != "/v1/ready":
                    assert list(answer["content"]) == ["application/problem+json"], (method, path, status)
    tool_show, effective = document["paths"]["/v1/tools/{id}"]["get"], \
        document["paths"]["/v1/subjects/{subject}/effective"]["get"]
    # each operation states the errors it can answer
    assert {"400", "401", "403", "404", "410", "421", "422", "503"} <= set(tool_show["responses"])
    assert {"409", "413", "422"} <= set(document["paths"]["/v1/grant/add"]["post"]["responses"])
    assert "429" in effective["responses"] and "401" not in document["paths"]["/v1/health"]["get"]["responses"]
    # and the headers it sends
    assert {"Deprecation", "Sunset", "Link"} <= set(tool_show["responses"]["200"]["headers"])
    assert "ETag" in effective["responses"]["200"]["headers"]
    assert effective["responses"]["304"]["headers"]["ETag"]["required"] is True
    assert effective["responses"]["503"]["headers"]["Retry-After"]["required"] is True
    assert tool_show["responses"]["401"]["headers"]["WWW-Authenticate"]["required"] is True
    # and the security schemes, with the scope each operation needs
    assert set(document["components"]["securitySchemes"]) == {"bearer", "signInCookie"}
    assert tool_show["security"] == [{"bearer": ["read"]}, {"signInCookie": ["read"]}]
    assert document["paths"]["/v1/audit/verify"]["get"]["x-toolcat-scope"] == "audit"
    assert document["paths"]["/v1/grant/add"]["post"]["security"] == [{"bearer": ["write"]}]
    assert document["paths"]["/v1/health"]["get"]["security"] == []


def test_a_method_not_answered_is_405_with_allow(admin: httpx.Client) -> None:
    refused = admin.delete("/v1/tools")
    problem(refused, 405, "not_allowed")
    assert refused.headers["Allow"] == "GET, HEAD"
    assert admin.get("/v1/grant/add").headers["Allow"] == "POST"


def test_head_is_answered_wherever_get_is(admin: httpx.Client, served: Served, keys: dict[str, str]) -> None:
    for path in ("/v1/tools", f"/v1/tools/{DEPRECATED}", "/v1/subjects/agent:triage/effective", "/",
                 "/v1/audit/report", "/v1/health", "/metrics", "/openapi.json"):
        got, head = admin.get(path), admin.head(path)
        assert (head.status_code, head.content) == (got.status_code, b""), path
        assert head.headers["content-type"] == got.headers["content-type"], path
    assert admin.head(f"/v1/tools/{DEPRECATED}").headers["Deprecation"].startswith("@")
    assert admin.head("/v1/subjects/agent:triage/effective").headers["ETag"]
    problem(admin.get(f"/v1/tools/{RETIRED}"), 410, "retired_alias")
    assert admin.head(f"/v1/tools/{RETIRED}").status_code == 410
    # a stream's HEAD ends after its headers
    watch = admin.head("/v1/subjects/agent:triage/watch")
    assert watch.status_code == 200 and watch.headers["content-type"].startswith("text/event-stream")
    with served.client() as anonymous:
        assert anonymous.head("/v1/tools").status_code == 401


def test_removal_step_2_over_http_is_refused_while_an_allowlist_names_the_old_id_until_migrated(
        admin: httpx.Client) -> None:
    # given an agent whose allowlist names the deprecated mcp.memory.write
    write(admin, "/v1/agent/create", {"agent": "migrating", "unit": "eng"})
    write(admin, "/v1/agent/allowlist", {"agent": "migrating", "patterns": [DEPRECATED, "read"]})
    # when step 2 ("stored data migrated") is recorded, then it is the command line's refusal, listing the holder
    body = problem(admin.post("/v1/alias/step", json={"alias": DEPRECATED, "step": 2, "evidence": "migrated"}),
                   422, "legacy_references")
    assert body["details"]["references"] == [{"kind": "allowlist", "holder": "agent:migrating"}]
    assert f"toolcat alias migrate {DEPRECATED}" in body["detail"]
    # and `alias migrate` over HTTP rewrites the allowlist, once
    migrated = write(admin, "/v1/alias/migrate", {"alias": DEPRECATED})
    assert [e["type"] for e in migrated["events"]] == ["Agent.AllowlistSet"]
    assert write(admin, "/v1/alias/migrate", {"alias": DEPRECATED})["events"] == []


def test_a_secret_alias_over_http_is_the_command_lines_with_its_refusals(admin: httpx.Client) -> None:
    # given the story's github-token (for the clipboard tool) and an alias of it in triage's scope
    added = write(admin, "/v1/secret/alias/add", {"subject": "agent:triage", "alias": "gh", "ref": "github-token",
                                                  "display_name": "GitHub token"})
    assert [e["type"] for e in added["events"]] == ["SecretAliases.Opened", "SecretAliases.AliasAdded"]
    problem(admin.post("/v1/secret/alias/add", json={"subject": "agent:triage", "alias": "gh",
                                                     "ref": "github-token"}), 422, "duplicate_secret_alias")
    # when it is resolved for another agent, or for a tool the reference does not allow: the same codes
    fresh = {"min_position": added["position"]}
    path = "/v1/subjects/{}/secret-aliases/gh"
    problem(admin.get(path.format("agent:nobody"), params={"tool": "tool.secret.copy-to-node-clipboard", **fresh}),
            422, "unknown_secret_alias")
    problem(admin.get(path.format("agent:triage"), params={"tool": "read", **fresh}), 422, "secret_ref_not_allowed")
