"""End to end: the README's tour of the command line, run as printed. Each `$ toolcat …` line of its
console sessions runs in one fresh home, in order, and prints what the README shows after it (chain
hashes aside, which depend on the time of recording); `echo $?` shows the exit code of the command before.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from tests.doc_text import code_blocks, section
from tests.support import answered_here, toolcat_environ

HASH = re.compile(r"\b[0-9a-f]{64}\b")


def sessions() -> list[list[tuple[str, str]]]:
    """Each console block of the tour as (command line, the output printed after it)."""
    found = []
    for block in code_blocks(section("README.md", "## A tour of the command line"), "console"):
        steps: list[tuple[str, list[str]]] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        found.append([(command, "\n".join(output)) for command, output in steps])
    return found


def run_line(line: str, last_code: int) -> tuple[str, int]:
    """One shell line of the tour: toolcat commands joined by `&&`, or `echo $?`."""
    if line == "echo $?":
        return str(last_code), last_code
    printed, code = [], 0
    for command in line.split(" && "):
        program, *args = shlex.split(command)
        assert program == "toolcat", line
        run = answered_here(args)
        code = run.code
        # What a command answers, or its error: a read that catches up slowly also says so on stderr.
        printed.append(run.stderr if code else run.stdout)
        if code:
            break
    return "".join(printed).rstrip("\n"), code


def same(shown: str, printed: str) -> bool:
    if shown.startswith("{"):  # a JSON answer, laid out over several lines in the README
        return json.loads(shown) == json.loads(printed)
    return HASH.sub("HASH", shown) == HASH.sub("HASH", printed)


@pytest.fixture
def tour_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This installation's `toolcat` first on the PATH, as after activating the venv (hints then name it
    `toolcat`)."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return tmp_path / "home"


def test_the_readme_tour_prints_what_it_shows(tour_home: Path) -> None:
    # The home comes from the environment: a hint names --home only when the command was given it.
    with toolcat_environ("tester"), pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOOLCAT_HOME", str(tour_home))
        code = 0
        for session in sessions():
            for line, shown in session:
                printed, code = run_line(line, code)
                assert same(shown, printed), f"$ {line}\nshown:\n{shown}\nprinted:\n{printed}"
    assert [len(session) for session in sessions()] == [9, 5]
