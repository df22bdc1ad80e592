"""The auditor's integrity journey through the `toolcat` command line: a read never creates a home; `audit
verify` says what it compared the chain with, and is "unverified" when that is nothing; `audit seal` gives
the head to keep outside the store, and `audit verify --expect-head` checks the history against it."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.expected import check_expected
from tests.integration.test_audit_seals import tamper
from tests.support import Run, ok, toolcat_environ, toolcat_in_process

UNVERIFIED = 7
READS = (["audit", "verify"], ["audit", "alias", "x.y"], ["audit", "report", "-o", "-"], ["resolve", "read"],
         ["tool", "list"], ["effective", "unit:eng"], ["sql", "select 1"], ["audit", "fingerprint"])


def answered(run: Run, code: int) -> Any:
    assert run.code == code, f"expected exit {code}, got {run.code}\nstdout: {run.stdout}\nstderr: {run.stderr}"
    return run.json


def forge(state: bytes) -> bytes:
    assert state.count(b'"actor":"auditor"') == 1, state
    return state.replace(b'"actor":"auditor"', b'"actor":"auditoR"')


@pytest.mark.parametrize("missing", ["no directory", "an empty directory"])
def test_no_read_creates_a_home(tmp_path: Path, missing: str) -> None:
    home = tmp_path / "typo"
    if missing == "an empty directory":
        home.mkdir()
    with toolcat_environ("auditor"):
        for argv in READS:
            run = toolcat_in_process(home, *argv, "--json")
            assert run.code == 2, (argv, run)
            error = json.loads(run.stderr)["error"]
            assert error["code"] == "home_not_found", (argv, error)
            assert str(home) in error["message"] and "--home" in error["message"]
            assert error["details"] == {"home": str(home)}
    # nothing was created: not the home, nor a store or read model in it
    assert (list(home.iterdir()) if home.exists() else None) == ([] if missing == "an empty directory" else None)


def test_a_chain_compared_with_nothing_is_unverified_not_ok(audit_home: Path, toolcat: Any) -> None:
    report = answered(toolcat("audit", "verify"), UNVERIFIED)
    assert report["ok"] is False and report["verdict"] == "unverified"
    assert report["absent"] == ["read_model", "seals"]
    assert report["compared"] == {"read_model": {"present": False, "events": 0, "through": None},
                                  "seals": {"count": 0, "latest": None}, "expected_head": None}
    assert report["events"] == report["position"] > 30 and report["seals"] == 0
    # verify compared the read model as it stood and did not create one
    assert not (audit_home / "catalog.duckdb").exists()
    assert answered(toolcat("audit", "verify"), UNVERIFIED) == report


def test_expected_verify_renderings(audit_home: Path, toolcat: Any, request: pytest.FixtureRequest) -> None:
    unverified = toolcat("audit", "verify", json_output=False)
    assert unverified.code == UNVERIFIED and unverified.stderr == ""
    check_expected(request, "audit/verify_unverified.txt", unverified.stdout)
    check_expected(request, "audit/verify_unverified.json", toolcat("audit", "verify").stdout)
    ok(toolcat("tool", "list"))  # a read: the read model catches up and records every hash
    verified = toolcat("audit", "verify", json_output=False)
    assert verified.code == 0
    check_expected(request, "audit/verify_verified.txt", verified.stdout)
    check_expected(request, "audit/verify_verified.json", toolcat("audit", "verify").stdout)


def test_verify_compares_the_read_model_as_it_stands_and_names_what_it_covers(
        audit_home: Path, toolcat: Any, cli_write: Any) -> None:
    projected = ok(toolcat("sql", "select max(position) AS m from events"))[0]["m"]
    written = cli_write("unit", "create", "after-the-read")["position"]
    report = ok(toolcat("audit", "verify"))
    assert report["verdict"] == "verified" and report["absent"] == ["seals"]
    assert report["position"] == written > projected
    assert report["compared"]["read_model"] == {"present": True, "events": projected, "through": projected}
    # verify did not catch the read model up: asked again, it compares the same hashes
    assert ok(toolcat("audit", "verify"))["compared"]["read_model"]["through"] == projected


def test_expected_seal_rendering_gives_the_head_to_keep_outside_the_store(audit_home: Path, toolcat: Any,
                                                        request: pytest.FixtureRequest) -> None:
    head = answered(toolcat("audit", "verify"), UNVERIFIED)
    sealed = ok(toolcat("audit", "seal"))
    assert sealed["seal"] == {"position": head["position"], "head": head["head"], "events": head["events"],
                              "verdict": "unverified"}
    assert [e["type"] for e in sealed["events"]] == ["Audit.Started", "Audit.Sealed"]  # the first seal
    assert sealed["position"] == head["position"] + 2

    # a seal alone is a witness: verified, the read model still absent
    after = ok(toolcat("audit", "verify"))
    assert after["verdict"] == "verified" and after["absent"] == ["read_model"]
    assert after["compared"]["seals"] == {"count": 1, "latest": head["position"]}

    text = toolcat("audit", "seal", json_output=False)
    assert text.code == 0
    assert "outside the store" in text.stdout and "toolcat audit verify --expect-head " in text.stdout
    check_expected(request, "audit/seal.txt", text.stdout)


def test_verify_against_a_head_kept_outside_the_store(audit_home: Path, toolcat: Any) -> None:
    kept = ok(toolcat("audit", "seal"))["seal"]
    ok(toolcat("unit", "create", "later"))
    report = ok(toolcat("audit", "verify", "--expect-head", kept["head"].upper()))
    assert report["compared"]["expected_head"] == {"hash": kept["head"], "position": kept["position"]}

    refused = toolcat("audit", "verify", "--expect-head", "abc123")
    assert refused.code == 2 and json.loads(refused.stderr)["error"]["code"] == "usage"


def test_a_kept_head_finds_what_nothing_inside_the_store_can(audit_home: Path, toolcat: Any) -> None:
    """Whoever can rewrite the store can rewrite the hashes after an event: only a copy kept elsewhere
    still disagrees."""
    kept = answered(toolcat("audit", "verify"), UNVERIFIED)["head"]
    tamper(audit_home, 8, forge)  # the registration of acme.ticket.close

    # inside the store the rewritten chain agrees with itself: nothing to compare against
    assert answered(toolcat("audit", "verify"), UNVERIFIED)["head"] != kept
    failed = toolcat("audit", "verify", "--expect-head", kept)
    assert failed.code == 5 and failed.stdout == ""
    error = json.loads(failed.stderr)["error"]
    assert error["code"] == "integrity" and error["details"]["expected_head"] == kept
    assert f"the head kept outside the store ({kept}) is not in the history" in error["message"]


@pytest.fixture
def cli_write(audit_home: Path) -> Any:
    """A write in this process, in the test's home."""
    def write(*args: str) -> Any:
        with toolcat_environ("auditor"):
            return ok(toolcat_in_process(audit_home, *args, "--json"))
    return write
