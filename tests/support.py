"""What the suites share that is not a fixture: running `toolcat` (as a subprocess or in this process)
with no TOOLCAT_ setting leaking in from the caller's environment, and reading its answers.

A plain module, so that tests, fixtures and child processes (`python -c "from tests…"`) can import it.
"""
from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from domain.base import RECORDING_CLOCK
from infra.cli import main
from infra.dev.demo import EXAMPLES, script, script_lines
from infra.dev.example_clock import ExampleClock

TOOLCAT = str(Path(sys.executable).with_name("toolcat"))
PROJECT_ROOT = Path(__file__).resolve().parents[1]
# The bundled example story (examples/tyrum.toolcat), one argument list per command.
SCRIPT = script_lines(EXAMPLES / "tyrum.toolcat")


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)

    @property
    def error(self) -> dict[str, Any]:
        return json.loads(self.stderr)["error"]


def ok(run: Run) -> Any:
    """The JSON answer of a command that must have succeeded (else the end of what it wrote)."""
    assert run.code == 0, f"exit {run.code}\nstdout: {run.stdout[-3000:]}\nstderr: {run.stderr[-3000:]}"
    return run.json


def error_of(run: Run) -> dict[str, Any]:
    """The JSON error document a failed `--json` command wrote (other stderr lines, e.g. client logs,
    are ignored)."""
    for line in reversed(run.stderr.splitlines()):
        if line.startswith('{"error"'):
            return json.loads(line)["error"]
    raise AssertionError(f"exit {run.code} without a JSON error document on stderr:\n{run.stderr}")


# -- the environment ---------------------------------------------------------------------------------

def clean_environ() -> dict[str, str]:
    """This process's environment without any TOOLCAT_ setting (the tests say which they want)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("TOOLCAT_")}


def toolcat_env(actor: str, *extra: dict[str, str] | None) -> dict[str, str]:
    """The environment of a `toolcat` subprocess: no inherited TOOLCAT_ setting, this actor, then `extra`."""
    env = clean_environ()
    env["TOOLCAT_ACTOR"] = actor
    for settings in extra:
        env.update(settings or {})
    return env


@contextlib.contextmanager
def toolcat_environ(actor: str) -> Iterator[None]:
    """This process's environment without any TOOLCAT_ setting but the actor, restored on exit."""
    with pytest.MonkeyPatch.context() as patch:
        for key in [k for k in os.environ if k.startswith("TOOLCAT_")]:
            patch.delenv(key)
        patch.setenv("TOOLCAT_ACTOR", actor)
        yield


# -- running toolcat ---------------------------------------------------------------------------------

def run_toolcat(*args: str, env: dict[str, str], timeout: float, json_output: bool = True) -> Run:
    """The installed `toolcat ARGS [--json]` in a subprocess with exactly `env`; a hang fails the test."""
    command = [TOOLCAT, *args] + (["--json"] if json_output else [])
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise AssertionError(f"toolcat {' '.join(args)} did not finish within {timeout}s:\n"
                             f"stdout: {error.stdout}\nstderr: {error.stderr}") from error
    return Run(done.returncode, done.stdout, done.stderr)


def call_toolcat(*args: str, env: dict[str, str], json_output: bool = True) -> Run:
    """`toolcat ARGS [--json]` answered in this process, as `run_toolcat` answers it in a subprocess: the
    same parser, output and exit code, with this process's environment made exactly `env` meanwhile (the
    settings are read from it). About a second faster a command: no interpreter to start, nothing to
    import again. Long-running commands (serve, relay --follow, demo) belong in a subprocess."""
    with pytest.MonkeyPatch.context() as patch:
        for key in [k for k in os.environ if k not in env]:
            patch.delenv(key)
        for key, value in env.items():
            patch.setenv(key, value)
        return answered_here([*args] + (["--json"] if json_output else []))


def toolcat_in_process(home: Path, *args: str) -> Run:
    """`toolcat ARGS --home HOME` run in this process (fast), its output captured. The caller sets the
    environment (see `toolcat_environ`)."""
    return answered_here([*args, "--home", str(home)])


def answered_here(argv: list[str]) -> Run:
    """`toolcat ARGV` answered in this process, as its environment stands, its output captured."""
    out, err = io.StringIO(), io.StringIO()
    on_sigterm = signal.getsignal(signal.SIGTERM)  # a following command sets its own (infra/signals.py)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:  # --help, as argparse ends it
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        finally:
            signal.signal(signal.SIGTERM, on_sigterm)
    return Run(code, out.getvalue(), err.getvalue())


def run_example(home: Path, name: str = "tyrum", actor: str = "tester") -> None:
    """Store a bundled example story in `home` as the demo does: each command at its example clock's time
    (its history spans months, so date questions answer as in docs/analysts.md)."""
    def build(into: Path) -> None:
        clock = ExampleClock()
        for moment, args in script(EXAMPLES / f"{name}.toolcat"):
            if moment is not None:
                clock.set(moment)
            with clock.recording():
                _run_commands(into, [args], actor)
    _built_once(home, ("example", name, actor), build)


def run_in_process(home: Path, commands: Iterable[list[str]], actor: str = "tester") -> None:
    """Run toolcat commands in this process against `home` (fast); each must succeed. A home that does not
    exist yet is a copy of the one these commands built first in this process."""
    listed = [list(args) for args in commands]
    key = ("commands", actor, *(tuple(args) for args in listed))
    _built_once(home, key, lambda into: _run_commands(into, listed, actor))


def _run_commands(home: Path, commands: list[list[str]], actor: str) -> None:
    with toolcat_environ(actor):
        for args in commands:
            run = toolcat_in_process(home, *args)
            assert run.code == 0, f"toolcat {' '.join(args)} failed with exit {run.code}: {run.stderr.strip()}"


# Homes built in this process, by what built them: a story stored once is copied for every other test that
# starts from it (a copy costs milliseconds, the story seconds). Only for homes that do not exist yet.
_BUILT_HOMES: dict[tuple[Any, ...], Path] = {}


def _built_once(home: Path, key: tuple[Any, ...], build: Callable[[Path], None]) -> None:
    if home.exists() or RECORDING_CLOCK.get() is not None:  # a caller's clock: its own times, not a copy's
        build(home)
        return
    built = _BUILT_HOMES.get(key)
    if built is None or not built.exists():
        built = Path(tempfile.mkdtemp(prefix="toolcat-built-")) / "home"
        atexit.register(shutil.rmtree, built.parent, True)
        build(built)
        _BUILT_HOMES[key] = built
    shutil.copytree(built, home)


def run_python_child(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -c CODE ARGS…` from the project root (so `tests.…` imports), no TOOLCAT_ environment."""
    env = clean_environ()
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    return subprocess.run([sys.executable, "-c", code, *args], cwd=PROJECT_ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)
