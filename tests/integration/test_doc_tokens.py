"""The token commands docs/security.md shows ("A token's life"), run as printed in a fresh home: each
succeeds, and the list it prints names the tokens the block made and not the one it revoked."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.doc_text import code_blocks, section
from tests.support import answered_here, toolcat_environ


def shown_commands() -> list[list[str]]:
    block = code_blocks(section("docs/security.md", "## Tokens and scopes"), "sh")
    assert len(block) == 1
    return [shlex.split(line, comments=True) for line in block[0].splitlines() if line.strip()]


def test_the_token_commands_security_md_shows_run_as_printed(tmp_path: Path) -> None:
    with toolcat_environ("tester"), pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOOLCAT_HOME", str(tmp_path / "home"))
        for program, *args in shown_commands():
            assert program == "toolcat"
            run = answered_here(args)
            assert run.code == 0, f"toolcat {shlex.join(args)}: {run.stderr}"
        listed = answered_here(["token", "list", "--json"])
    assert [(t["name"], t["subject"]) for t in listed.json] == [("triage-bot", "agent:triage")]
