"""A new user's guidance: every option explains itself, a typo is answered with the nearest command, and a
hint the program prints runs when pasted."""
from __future__ import annotations

import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.cli import build_parser
from infra.cli.registry import Parser
from infra.hints import command
from tests.support import error_of, run_in_process, toolcat_env, toolcat_environ, toolcat_in_process


def options_without_help(parser: Parser, path: str = "toolcat") -> Iterator[str]:
    for action in parser.options:
        if action.option_strings and not action.help:
            yield f"{path} {action.option_strings[-1]}"
    for name, sub in parser.groups.items():
        yield from options_without_help(sub, f"{path} {name}")


def test_every_option_of_every_command_has_help_text() -> None:
    # given the whole command tree, when each option is asked for its help, then none is silent
    assert list(options_without_help(build_parser())) == []


@pytest.mark.parametrize("typed, suggested", [
    (["efective", "agent:a"], "effective"),
    (["audit", "verfy"], "verify"),
    (["tool", "list", "--group", "cor"], "core"),
])
def test_a_typo_is_answered_with_the_nearest_choice(home: Path, typed: list[str], suggested: str) -> None:
    # when a user mistypes a command, a subcommand or a choice
    with toolcat_environ("guide"):
        run = toolcat_in_process(home, *typed, "--json")
    # then the usage error names the nearest one
    assert run.code == 2
    error = error_of(run)
    assert error["code"] == "usage"
    assert f"did you mean '{suggested}'?" in error["message"]


def test_the_hint_after_a_seal_runs_as_printed(home: Path) -> None:
    # given a sealed catalog
    run_in_process(home, [["init"]])
    with toolcat_environ("guide"):
        sealed = toolcat_in_process(home, "audit", "seal")
    assert sealed.code == 0, sealed.stderr
    # when the user pastes the command the seal told them to keep
    line = next(text for text in sealed.stdout.split(": ") if "--expect-head" in text).splitlines()[0]
    words = shlex.split(line)
    # then it is this installation's toolcat, with the home the seal was given, and it verifies
    assert words[:3] == shlex.split(command(home=str(home)))
    done = subprocess.run(words + ["--json"], capture_output=True, text=True, timeout=60, env=toolcat_env("guide"))
    assert done.returncode == 0, done.stderr
    assert '"ok": true' in done.stdout


def test_a_bad_setting_is_a_usage_error_naming_its_variable_and_nothing_is_written(home: Path) -> None:
    # given a setting the environment gives out of range, and one holding what could be a password
    with toolcat_environ("guide"), pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOOLCAT_SNAPSHOT_SECONDS", "0")
        patch.setenv("TOOLCAT_FOLLOW_BATCH_SECONDS", "s3cret-not-a-number")
        # when any command runs
        run = toolcat_in_process(home, "init", "--json")
    # then it is refused as usage, naming each variable and what it should be, never echoing the value
    assert run.code == 2, run.stderr
    error = error_of(run)
    assert error["code"] == "usage"
    assert set(error["details"]["settings"]) == {"TOOLCAT_SNAPSHOT_SECONDS", "TOOLCAT_FOLLOW_BATCH_SECONDS"}
    assert "greater than 0" in error["details"]["settings"]["TOOLCAT_SNAPSHOT_SECONDS"]
    assert "s3cret" not in run.stderr and "Traceback" not in run.stderr
    assert not home.exists() or not any(home.iterdir())
