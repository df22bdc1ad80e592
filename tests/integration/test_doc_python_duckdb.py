"""docs/analysts.md's Python guidance, run as printed on the pinned DuckDB: its snippet reads a read model
with `.arrow()` (a RecordBatchReader on DuckDB 2.0, read whole) and `.fetchall()` over TIMESTAMPTZ
columns (which needs pytz), in the venv's own interpreter."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.doc_text import code_blocks, page
from tests.support import clean_environ

PLACEHOLDER = '".toolcat/snapshot.duckdb"'


def test_the_documented_python_reads_a_read_model_on_the_pinned_duckdb(story: int, home: Path,
                                                                       tmp_path: Path) -> None:
    # given the snippet the page prints, and a copy of a read model standing for the snapshot
    [snippet] = [block for block in code_blocks(page("docs/analysts.md"), "python") if "import duckdb" in block]
    assert PLACEHOLDER in snippet
    snapshot = tmp_path / "snapshot.duckdb"
    shutil.copyfile(home / "catalog.duckdb", snapshot)
    # when it runs as printed, in the interpreter toolcat is installed in
    ran = subprocess.run([sys.executable, "-c", snippet.replace(PLACEHOLDER, repr(str(snapshot)))],
                         capture_output=True, text=True, timeout=120, env=clean_environ())
    # then it answers: the events counted, and the first ones with their times
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0].startswith(f"{story} events;") and "recorded_at" in lines[0]
    assert [line.split()[0] for line in lines[1:]] == ["1", "2", "3"]
    assert all("+00:00" in line or "T" in line for line in lines[1:])
