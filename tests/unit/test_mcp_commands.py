"""The MCP write commands as both entry points build them: the command line's repeated KEY=VALUE entries
and a JSON object are the same field, checked once; a bad entry is refused without repeating it."""
from __future__ import annotations

import pytest

from domain.commands.mcp import McpServerAdd, McpSync
from domain.errors import UsageError
from infra.writing import command_from

SECRET = "s3cr3t-Planted-Value-79"


def test_given_key_value_entries_or_an_object_then_the_command_holds_the_same_pairs() -> None:
    typed = command_from(McpServerAdd, {"name": "ours", "command": "x", "env": ["LOG_LEVEL=debug", "A=b=c"]})
    posted = command_from(McpServerAdd, {"name": "ours", "command": "x", "env": {"LOG_LEVEL": "debug", "A": "b=c"}})
    assert typed == posted and typed.env == {"LOG_LEVEL": "debug", "A": "b=c"}
    assert (typed.server, typed.tier, typed.connection().transport) == ("ours", "advanced", "stdio")


@pytest.mark.parametrize(("entries", "message"), [
    ([SECRET], "--env-ref entry 1 is not KEY=VALUE"),
    (["K=env:A", f"=${SECRET}"], "--env-ref entry 2 is not KEY=VALUE"),
    (["K=env:A", "K=env:B"], "--env-ref names K twice"),
])
def test_given_a_malformed_entry_then_it_is_a_usage_error_that_does_not_repeat_it(entries: list[str],
                                                                                  message: str) -> None:
    with pytest.raises(UsageError) as refused:
        command_from(McpServerAdd, {"name": "ours", "command": "x", "env_ref": entries})
    assert message in refused.value.message and SECRET not in str(refused.value.details)
    assert SECRET not in refused.value.message


def test_given_apply_and_check_together_then_the_sync_is_refused() -> None:
    assert command_from(McpSync, {"name": "ours", "check": True}).mode == "check"
    with pytest.raises(UsageError, match="apply and check exclude each other"):
        command_from(McpSync, {"name": "ours", "apply": True, "check": True})
