"""No DuckDB connection of toolcat draws DuckDB's progress bar, which goes to stdout, into a command's
answer. The Python client turns the bar on when it takes the interpreter for an interactive one, as it
does under `python -c` (the child here) and `python -m infra.cli` (how the bench runs `toolcat`): a
200k-event `bench --only projection --json` so run printed the bar before its document. The setting is
read, not provoked: drawing the bar takes a statement longer than its two seconds."""
from __future__ import annotations

import json
from pathlib import Path

from tests.support import run_python_child

CHILD = """
import json, sys
from pathlib import Path
import duckdb
from infra.settings import Settings
from infra.wiring import open_read_model
from projections.connection import connect
from projections.user_sql import sandbox_config

def bar(con):
    return con.execute("SELECT current_setting('enable_progress_bar')").fetchall()[0][0]

settings = Settings(home=Path(sys.argv[1]))
read_write = open_read_model(settings)
found = {"plain duckdb": bar(duckdb.connect()), "read model": bar(read_write), "scratch": bar(connect())}
read_write.close()
sandboxed = open_read_model(settings, read_only=True, config=sandbox_config())
found["user sql"], found["user sql cursor"] = bar(sandboxed), bar(sandboxed.cursor())
try:
    sandboxed.execute("SET enable_progress_bar = true")
    found["sandbox locked"] = False
except duckdb.InvalidInputException:
    found["sandbox locked"] = True
print(json.dumps(found))
"""


def test_no_connection_draws_the_progress_bar_where_duckdb_would(tmp_path: Path) -> None:
    # given a child interpreter in which DuckDB turns its progress bar on (a plain connection shows it)
    done = run_python_child(CHILD, str(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found.pop("plain duckdb") is True, "the child no longer reproduces DuckDB's interactive guess"
    # then every connection toolcat opens has it off, the user-SQL sandbox still locked
    assert found == {"read model": False, "scratch": False, "user sql": False, "user sql cursor": False,
                     "sandbox locked": True}
