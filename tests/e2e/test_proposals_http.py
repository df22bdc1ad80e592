"""End to end: proposals over HTTP on a real `toolcat serve` (one server for the module): a manifest
posted to /v1/proposal/make is planned and held; /v1/proposal/apply confirms it by id."""
from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import yaml

from tests.serving import admin_client, posted
from tests.support import PROJECT_ROOT

MANIFEST = yaml.safe_load((PROJECT_ROOT / "examples" / "spring-voyage.manifest.yaml").read_text())


@pytest.fixture(scope="module")
def admin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    with admin_client(tmp_path_factory.mktemp("proposals") / "home") as client:
        yield client


def test_a_manifest_is_planned_then_applied_by_its_id(admin: httpx.Client) -> None:
    # given an empty catalog served, when the Spring Voyage manifest is posted
    planned = posted(admin, "/v1/proposal/make", {"manifest": MANIFEST})
    assert planned["commands"][0] == {"command": "toolcat init --policy spring-voyage", "risk": "safe_create"}
    assert planned["violations"] == [] and "agent:librarian" in planned["effects"]
    # then applying the id (the payload is never sent again) builds the catalog, written by the token's name
    applied = posted(admin, "/v1/proposal/apply", {"id": planned["proposal_id"]})
    assert applied["events"][-2]["type"] == "Proposal.Applied"
    shown = admin.get("/v1/subjects/agent:helpdesk/effective").json()
    assert "acme.ticket_lookup" in [t["tool_id"] for t in shown["tools"]]
    # and a retried apply (the answer was lost, say) writes nothing and answers as the first did
    assert posted(admin, "/v1/proposal/apply", {"id": planned["proposal_id"]}) == applied


def test_a_manifest_over_http_is_content_never_a_file_name(admin: httpx.Client) -> None:
    refused = admin.post("/v1/plan", json={"manifest": "/etc/passwd"})
    assert (refused.status_code, refused.json()["code"]) == (400, "usage")
    unknown = admin.post("/v1/proposal/apply", json={"id": "p-000000000000"})
    assert (unknown.status_code, unknown.json()["code"]) == (404, "unknown_proposal")


def test_proposals_and_what_if_are_read_over_http(
        admin: httpx.Client) -> None:
    listed = admin.get("/v1/proposals").json()["proposals"]
    assert listed and {p["state"] for p in listed} <= {"open", "applied"}
    shown = admin.get(f"/v1/proposals/{listed[0]['proposal_id']}").json()
    assert shown["proposal_id"] == listed[0]["proposal_id"] and shown["commands"]
    what_if = admin.get("/v1/audit/what-if", params={"policy": "verb-noun"}).json()
    assert what_if["policy"] == "verb-noun" and what_if["refused"]
    refused = admin.get("/v1/audit/what-if", params={"policy": "/etc/passwd"})
    assert (refused.status_code, refused.json()["code"]) == (400, "usage")
