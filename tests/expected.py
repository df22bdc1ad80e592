"""Checked-in expected renderings of command output (`tests/e2e/expected/`), compared after masking what
legitimately differs between runs: hashes (the chain covers recording times), times and temporary paths.

Regenerate them after an intended change of output with
`.venv/bin/python -m pytest tests/e2e -k expected --regenerate-expected`, then review the diff.
"""
from __future__ import annotations

import difflib
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from infra.hints import program

EXPECTED = Path(__file__).parent / "e2e" / "expected"
_HASH = re.compile(r"\b[0-9a-f]{64}\b")
_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")


def masked(text: str, *paths: Path) -> str:
    """`text` with every hash, time, the day of the run (the day events were recorded, as the audit timeline
    says it) and each of `paths` replaced by a placeholder, and the program's name in hints
    (`.venv/bin/toolcat` where it is not on the PATH) written as `toolcat`."""
    text = text.replace(f"{program()} ", "toolcat ")
    for index, path in enumerate(paths):
        text = text.replace(str(path), f"<path{index}>")
    text = _TIME.sub("<time>", _HASH.sub("<hash>", text))
    now = datetime.now(timezone.utc)
    for day in (now, now - timedelta(days=1)):  # (a run may cross midnight)
        text = text.replace(day.strftime("%Y-%m-%d"), "<today>")
    return text


def check_expected(request: pytest.FixtureRequest, name: str, text: str, *paths: Path) -> None:
    """Compare masked `text` with the file `name` under tests/e2e/expected/ (rewrite it with
    --regenerate-expected)."""
    target = EXPECTED / name
    actual = masked(text, *paths).rstrip("\n") + "\n"
    if request.config.getoption("--regenerate-expected"):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(actual)
        return
    if not target.exists():
        pytest.fail(f"no expected rendering {target}: run pytest with --regenerate-expected and review it")
    wanted = target.read_text()
    if actual != wanted:
        diff = "".join(difflib.unified_diff(wanted.splitlines(True), actual.splitlines(True),
                                            f"expected/{name}", "actual"))
        pytest.fail(f"the output differs from the expected rendering {name} (if intended, rerun with "
                    f"--regenerate-expected and review the diff):\n{diff}")
