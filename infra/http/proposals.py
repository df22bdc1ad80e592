"""`POST /v1/proposal/make` and `POST /v1/proposal/apply`: the catalog as code over HTTP (ADR-0030: a
proposal is held by the server and confirmed by its id, never by a re-sent payload). They carry out the
`plan` and `apply` commands, as every write route does; the manifest comes as the body's JSON.

No `from __future__ import annotations` here: FastAPI reads the body types from the annotations."""

from typing import Any

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from infra.http import models
from infra.http.answers import respond, run_command
from domain.commands.proposals import Apply, Plan
from domain.errors import UsageError
from domain.manifest import Manifest
from domain.naming import PRESETS
from infra.http.auth import Principal, require
from infra.http.reads import AUDIT, FRESH, READ, Fresh
from infra.http.writes import KEY_HEADER, write_reply

router = APIRouter(tags=["proposals"])


class MakeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    manifest: Manifest = Field(description="the manifest, as the YAML or TOML file would hold it")
    reason: str | None = None


class ProposalApplyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="the proposal id a plan answered")
    confirm_destructive: bool = Field(False, description="required when the proposal takes anything away")
    reason: str | None = None


@router.post("/v1/proposal/make", summary="toolcat plan (the manifest as the body)",
             responses=models.documented(models.PlanAnswer, 400, 401, 403, 422))
async def make_proposal(request: Request, body: MakeBody, principal: Principal = Depends(require("write")),
                        idempotency_key: str | None = KEY_HEADER) -> Response:
    command = Plan(manifest=body.manifest)
    return respond(request, await write_reply(request, command, principal, body.reason, idempotency_key))


@router.post("/v1/proposal/apply", summary="toolcat apply PROPOSAL_ID",
             responses=models.documented(models.WriteAnswer, 400, 401, 403, 409, 422))
async def apply_proposal(request: Request, body: ProposalApplyBody,
                         principal: Principal = Depends(require("write")),
                         idempotency_key: str | None = KEY_HEADER) -> Response:
    command = Apply(proposal_id=body.id, confirm_destructive=body.confirm_destructive)
    return respond(request, await write_reply(request, command, principal, body.reason, idempotency_key))


# -- reads -------------------------------------------------------------------------------------------------
@router.get("/v1/proposals", summary="toolcat proposal list")
def list_proposals(request: Request, fresh: Fresh = FRESH, _: Any = READ) -> Response:
    return respond(request, run_command(request, "proposal list", fresh.values))


@router.get("/v1/proposals/{proposal_id}", summary="toolcat proposal show PROPOSAL_ID")
def show_proposal(request: Request, proposal_id: str, fresh: Fresh = FRESH, _: Any = READ) -> Response:
    return respond(request, run_command(request, "proposal show", {"proposal_id": proposal_id, **fresh.values}))


@router.get("/v1/audit/what-if", tags=["audit"], summary="toolcat audit what-if --policy NAME [--at P]")
def audit_what_if(request: Request, policy: str = Query(..., description="a preset naming policy"),
                  at: int | None = Query(None, ge=0), fresh: Fresh = FRESH, _: Any = AUDIT) -> Response:
    if policy not in PRESETS:  # a file name would be read on the server: only presets over HTTP
        raise UsageError(f"over HTTP, 'policy' names a preset ({', '.join(PRESETS)})", option="policy")
    return respond(request, run_command(request, "audit what-if", {"policy": policy, "at": at, **fresh.values}))
