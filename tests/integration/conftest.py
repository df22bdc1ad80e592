"""Fixtures of the integration suite: toolcat run in this process, and the bundled example story."""
from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import SCRIPT, Run, ok, run_in_process, toolcat_environ, toolcat_in_process


@pytest.fixture
def cli(home: Path) -> Iterator[Any]:
    """`toolcat … --home HOME --json` run in this process (fast), with only our settings in the environment."""
    def run(*args: str) -> Run:
        return toolcat_in_process(home, *args, "--json")
    with toolcat_environ("tester"):
        yield run


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The bundled example story, stored and projected once per module; returns (home, head position)."""
    home = tmp_path_factory.mktemp("story") / "home"
    run_in_process(home, SCRIPT)
    with toolcat_environ("tester"):
        head = ok(toolcat_in_process(home, "sql", "select count(*) AS n, max(position) AS m FROM events",
                                     "--json"))[0]
    assert head["n"] == head["m"] > 50
    return home, head["m"]


@pytest.fixture
def story(template: tuple[Path, int], home: Path) -> int:
    """Given the bundled example story is stored and projected in this test's home; returns the head."""
    shutil.copytree(template[0], home)
    return template[1]
