"""Rule 21 (ARCH-19) on the command line: `secret alias add agent:X ALIAS REF --display-name …` records an
agent-scoped alias; `secret alias resolve agent:X ALIAS --tool ID` answers its safe metadata only inside
that agent's scope and allowlist, and fails before any resolution for an unknown or disallowed alias."""
from __future__ import annotations

from typing import Any

import pytest

from tests.support import ok

CLIPBOARD = "tool.secret.copy-to-node-clipboard"
NODE_TOOL = ["--source", "builtin", "--group", "node", "--tier", "advanced", "--visibility", "public"]
VALUE = "ghp_Pl4nt3dV4lu3xx"


@pytest.fixture
def aliased(toolcat: Any) -> Any:
    """Given triage and scout in unit eng (granted the clipboard tool and read), github-token allowed to the
    clipboard tool, and triage's alias `github` for it."""
    for args in (["init", "--policy", "tyrum"],
                 ["tool", "register", CLIPBOARD, *NODE_TOOL, "--class", "source:sensitive"],
                 ["tool", "register", "read", "--source", "builtin", "--group", "core", "--tier", "default",
                  "--visibility", "public", "--risk", "read_only"],
                 ["unit", "create", "eng"], ["agent", "create", "triage", "--unit", "eng"],
                 ["agent", "create", "scout", "--unit", "eng"],
                 ["grant", "add", "unit:eng", CLIPBOARD], ["grant", "add", "unit:eng", "read"],
                 ["secret", "ref", "add", "github-token", "--allow-tool", CLIPBOARD],
                 ["secret", "alias", "add", "agent:triage", "github", "github-token",
                  "--display-name", "GitHub deploy token"]):
        ok(toolcat(*args))
    return toolcat


def refused(run: Any, code: str) -> dict[str, Any]:
    assert run.code == 3, (run.code, run.stdout, run.stderr)
    assert run.error["code"] == code, run.error
    return run.error


def test_an_agents_alias_resolves_to_safe_metadata_for_an_allowed_tool(aliased: Any) -> None:
    assert ok(aliased("secret", "alias", "resolve", "agent:triage", "github", "--tool", CLIPBOARD)) == {
        "subject": "agent:triage", "secret_alias": "github", "secret_ref_id": "github-token",
        "display_name": "GitHub deploy token", "tool_id": CLIPBOARD}
    text = aliased("secret", "alias", "resolve", "agent:triage", "github", "--tool", CLIPBOARD, json_output=False)
    assert "github → secret reference github-token (GitHub deploy token)" in text.stdout


def test_an_alias_is_unknown_outside_its_agents_scope(aliased: Any) -> None:
    error = refused(aliased("secret", "alias", "resolve", "agent:scout", "github", "--tool", CLIPBOARD),
                    "unknown_secret_alias")
    assert error["details"]["known"] == []


def test_an_alias_for_a_tool_its_reference_does_not_allow_is_refused(aliased: Any) -> None:
    refused(aliased("secret", "alias", "resolve", "agent:triage", "github", "--tool", "read"),
            "secret_ref_not_allowed")


def test_an_alias_for_a_tool_the_agents_allowlist_does_not_enable_is_refused(aliased: Any) -> None:
    ok(aliased("agent", "allowlist", "triage", "read"))

    error = refused(aliased("secret", "alias", "resolve", "agent:triage", "github", "--tool", CLIPBOARD),
                    "secret_alias_not_allowed")
    assert error["details"]["exposure"] == "disabled_by_agent_allowlist"


def test_a_duplicate_or_value_like_alias_is_refused_and_nothing_is_written(aliased: Any) -> None:
    before = ok(aliased("sql", "SELECT count(*) AS n FROM events"))[0]["n"]
    refused(aliased("secret", "alias", "add", "agent:triage", "github", "github-token"), "duplicate_secret_alias")
    run = aliased("secret", "alias", "add", "agent:triage", VALUE, "github-token")
    refused(run, "secret_value_refused")
    assert VALUE not in run.stdout + run.stderr
    assert ok(aliased("sql", "SELECT count(*) AS n FROM events"))[0]["n"] == before
