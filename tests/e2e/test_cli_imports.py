"""The command line answers at once: `toolcat --help` imports no database, model or server library, and a
read answered from a current read model loads neither the domain model nor the projector, the HTTP stack,
jsonschema or a Kafka client (infra/cli/__init__.py). Checked in a fresh interpreter, by the modules it
holds after the command: no timing involved."""
from __future__ import annotations

import json
from pathlib import Path

from infra.cli import COMMAND_MODULES
from tests.support import run_in_process, run_python_child

# What a command imports only when it runs a handler that needs it.
HEAVY = ("duckdb", "pyarrow", "pydantic", "pydantic_settings", "eventsourcing", "rich", "jsonschema", "fastapi",
         "starlette", "uvicorn", "kafka", "confluent_kafka", "yaml", "domain.catalog", "projections.projector")
# What no read of a current read model needs: pyarrow (DuckDB's rows are fetched without Arrow, and no
# table is registered), eventsourcing (the SQLite store's head is read with sqlite3, infra/wiring.py).
NOT_FOR_READS = ("jsonschema", "fastapi", "starlette", "uvicorn", "kafka", "confluent_kafka", "domain.catalog",
                 "domain.registry", "projections.projector", "projections.catchup", "pyarrow", "eventsourcing",
                 "numpy", "pandas", "rich", "yaml", "httpx", "psycopg")

CHILD = """
import contextlib, io, json, sys
from infra.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as done:  # --help
        code = done.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def modules_after(*args: str) -> set[str]:
    child = run_python_child(CHILD, *args)
    assert child.returncode == 0, child.stderr
    answer = json.loads(child.stdout)
    assert answer["code"] == 0, answer
    return set(answer["modules"])


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return [name for name in names if name in modules]


def test_help_imports_no_database_model_or_server_library() -> None:
    modules = modules_after("--help")
    assert loaded(modules, HEAVY) == []
    # nor any command module: the commands are listed from infra/cli/index.py (tests/unit/test_cli_parser.py)
    assert [name for name in COMMAND_MODULES if f"infra.cli.{name}" in modules] == []


def test_a_read_of_a_current_read_model_loads_only_what_it_answers_with(home: Path) -> None:
    run_in_process(home, [["init"], ["unit", "create", "eng"], ["agent", "create", "bot", "--unit", "eng"],
                          ["tool", "register", "read", "--source", "builtin", "--group", "core", "--tier",
                           "default", "--visibility", "public"], ["grant", "add", "unit:eng", "read"],
                          ["effective", "agent:bot"]])  # the last one brings the read model up to date
    for read in (["resolve", "read"], ["effective", "agent:bot"]):
        modules = modules_after("--home", str(home), *read, "--json")
        assert "duckdb" in modules
        assert loaded(modules, NOT_FOR_READS) == [], read
        # and as people read it: the same, but a table is printed with rich
        shown = modules_after("--home", str(home), *read)
        assert loaded(shown, tuple(name for name in NOT_FOR_READS if name != "rich")) == [], read
