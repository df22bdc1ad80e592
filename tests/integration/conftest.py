"""Fixtures of the integration suite that only need the SQLite file store."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from infra.cli import main
from infra.demo import EXAMPLES, script_lines
from infra.settings import Settings
from infra.wiring import open_catalog, open_read_model
from tests.conftest import Run


@pytest.fixture
def sqlite_catalog(sqlite_settings: Settings) -> Any:
    app = open_catalog(sqlite_settings)
    yield app
    app.close()


@pytest.fixture
def sqlite_read_model(sqlite_settings: Settings) -> Any:
    con = open_read_model(sqlite_settings)
    yield con
    con.close()


@pytest.fixture
def cli(home: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """`toolcat … --home HOME --json` run in this process (fast), with only our settings in the environment."""
    for key in list(os.environ):
        if key.startswith("TOOLCAT_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("TOOLCAT_ACTOR", "tester")

    def run(*args: str) -> Run:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*args, "--home", str(home), "--json"])
        return Run(code, out.getvalue(), err.getvalue())
    return run


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The bundled example story, stored and projected once per module; returns (home, head position)."""
    home = tmp_path_factory.mktemp("story") / "home"
    with pytest.MonkeyPatch.context() as patch:
        for key in list(os.environ):
            if key.startswith("TOOLCAT_"):
                patch.delenv(key)
        patch.setenv("TOOLCAT_ACTOR", "tester")
        for args in script_lines(EXAMPLES / "tyrum.toolcat"):
            with contextlib.redirect_stdout(io.StringIO()):
                assert main([*args, "--home", str(home), "--json"]) == 0, args
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["sql", "select count(*) AS n, max(position) AS m FROM events", "--home", str(home),
                         "--json"]) == 0
    head = json.loads(out.getvalue())[0]
    assert head["n"] == head["m"] > 50
    return home, head["m"]


@pytest.fixture
def story(template: tuple[Path, int], home: Path) -> int:
    """Given the bundled example story is stored and projected in this test's home; returns the head."""
    shutil.copytree(template[0], home)
    return template[1]
