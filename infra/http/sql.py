"""`POST /v1/sql`: a read-only query on the server's read model, answered in the format `Accept` asks for.

The SQL surface itself (what is refused, the statement timeout, the row limit, the encodings) is the
command line's; `_check` and `_answer` are the one place this endpoint calls it.
"""
from __future__ import annotations

from typing import Any, Literal

import duckdb
from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from domain.errors import UsageError
from infra.freshness import Freshness
from infra.http import models
from infra.http.answers import REPLY_MEDIA_TYPE, json_response, respond, run_command, server_of
from infra.http.auth import require

router = APIRouter(tags=["sql"])
JSON = "application/json"


class SqlRefused(UsageError):
    code = "sql_refused"


class SqlQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(description="one read-only statement")
    format: Literal["table", "json", "csv"] | None = Field(
        None, description=f"only with Accept: {REPLY_MEDIA_TYPE} (the command line's --format)")


def _check(query: str) -> None:
    """Refuse anything but reading (stands in for the SQL surface's own check until it is merged)."""
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as error:
        raise UsageError(f"the query failed: {error}", query=query) from error
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        raise SqlRefused("only one read-only SELECT statement is answered", query=query)


def _answer(con: duckdb.DuckDBPyConnection, query: str, media_type: str) -> Response:
    try:
        rows = con.sql(query).to_arrow_table().to_pylist()
    except duckdb.Error as error:
        raise UsageError(f"the query failed: {error}", query=query) from error
    return json_response(rows, media_type=media_type)


@router.post("/v1/sql", responses={200: {"content": {JSON: {}}}, 400: models.PROBLEMS[400]})
def sql(request: Request, body: SqlQuery, _: Any = Depends(require("read"))) -> Response:
    _check(body.query)
    accept = request.headers.get("accept", JSON)
    if REPLY_MEDIA_TYPE in accept:
        return respond(request, run_command(request, "sql", {"query": body.query, "format": body.format}))
    with server_of(request).read_model(Freshness()) as con:
        return _answer(con, body.query, JSON)
