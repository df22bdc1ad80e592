"""`POST /v1/sql`: a read-only query on the server's read model, answered in the format `Accept` asks for.

The SQL surface is the command line's: `projections.user_sql.run_query` checks the statement, runs it under
the statement timeout (TOOLCAT_SQL_TIMEOUT_SECONDS) and stops reading at the row limit
(TOOLCAT_SQL_ROW_LIMIT) or the byte limit (TOOLCAT_SQL_MAX_BYTES); `projections.sql_encode.encode` writes JSON, CSV, an Arrow IPC stream or Parquet.
The server's database is opened with the user-SQL sandbox (infra/http/state.py), so what the check lets
through still cannot reach a file.
"""
from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from domain.errors import UsageError
from infra.freshness import Freshness
from infra.http import models
from infra.http.answers import REPLY_MEDIA_TYPE, respond, run_command, server_of
from infra.http.auth import require
from infra.http.problems import NotAcceptable
from infra.http.snapshot import snapshot_path
from projections.sql_encode import JSON, MEDIA_TYPES, byte_limit, cut_by, encode, row_limit, truncated

router = APIRouter(tags=["sql"])
# Answer headers: the row and byte limits the query ran under, whether one cut the answer short, and which.
ROW_LIMIT_HEADER, BYTE_LIMIT_HEADER = "Toolcat-Row-Limit", "Toolcat-Byte-Limit"
TRUNCATED_HEADER, CUT_BY_HEADER = "Toolcat-Truncated", "Toolcat-Cut-By"


class SqlQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(description="one read-only query: SELECT, WITH, EXPLAIN, DESCRIBE, SHOW or SUMMARIZE")
    format: Literal["table", "json", "csv"] | None = Field(
        None, description=f"only with Accept: {REPLY_MEDIA_TYPE} (the command line's --format)")


def media_type_of(accept: str | None) -> str:
    """The answer's media type: the first of `accept`'s types (by quality, then order) that we write;
    JSON for none, `*/*` or `application/*`."""
    offered: list[tuple[float, int, str]] = []
    for index, part in enumerate((accept or "").split(",")):
        kind, *parameters = [piece.strip() for piece in part.split(";")]
        quality = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if kind and quality > 0:
            offered.append((-quality, index, kind.lower()))
    if not offered:
        return JSON
    for _, _, kind in sorted(offered):
        if kind in MEDIA_TYPES or kind == REPLY_MEDIA_TYPE:
            return kind
        if kind in ("*/*", "application/*"):
            return JSON
        if kind == "text/*":
            return "text/csv"
    raise NotAcceptable(f"POST /v1/sql answers {', '.join(MEDIA_TYPES)}; Accept asked for {accept}",
                        accept=accept, media_types=list(MEDIA_TYPES))


_LIMIT_HEADERS = {
    ROW_LIMIT_HEADER: {"description": "the row limit the query ran under", "schema": {"type": "integer"}},
    BYTE_LIMIT_HEADER: {"description": "the byte limit (Arrow size) the query ran under", "schema": {"type": "integer"}},
    TRUNCATED_HEADER: {"description": "true when a limit cut the answer short", "schema": {"type": "string"}},
    CUT_BY_HEADER: {"description": "which limit cut it: rows or bytes (only when cut)", "schema": {"type": "string"}},
}
_ANSWERS = {200: {"content": {kind: {} for kind in MEDIA_TYPES}, "headers": _LIMIT_HEADERS,
                  "description": f"the rows; {TRUNCATED_HEADER}: true when the row or byte limit cut them short "
                                 f"({CUT_BY_HEADER}: rows or bytes)"},
            400: models.PROBLEMS[400], 406: {"description": "Accept names no media type answered here"},
            422: models.PROBLEMS[422]}


def run_user_sql(app: Any, query: str) -> Any:
    """One user query, not on the server's own connection: in a worker process on the published snapshot,
    brought up to the read model's position first (projections/sql_worker.py says why: DuckDB cannot bound
    or stop every query in the server's process)."""
    state, settings = app.state.server, app.state.server.settings
    state.writer.flush()
    state.wait_until_fresh(Freshness())
    app.state.snapshots.publish()
    return app.state.sql_workers.run(str(snapshot_path(settings.home)), query, settings.sql_timeout_seconds,
                                     settings.sql_row_limit, settings.sql_max_bytes)


@router.post("/v1/sql", responses=_ANSWERS)
def sql(request: Request, body: SqlQuery, _: Any = Depends(require("read"))) -> Response:
    media_type = media_type_of(request.headers.get("accept"))
    if media_type == REPLY_MEDIA_TYPE:
        return respond(request, run_command(request, "sql", {"query": body.query, "format": body.format}))
    if body.format is not None:
        raise UsageError("'format' is the command line's; over HTTP the Accept header chooses the format",
                         format=body.format)
    table = run_user_sql(request.app, body.query)
    headers = {ROW_LIMIT_HEADER: str(row_limit(table)), BYTE_LIMIT_HEADER: str(byte_limit(table)),
               TRUNCATED_HEADER: str(truncated(table)).lower()}
    if truncated(table):
        headers[CUT_BY_HEADER] = str(cut_by(table))
    return Response(encode(table, media_type), media_type=media_type, headers=headers)
