"""The `cli` figure of `toolcat bench`: how soon the command line answers, beside what Python itself costs
in the same run (`python -c pass`, `python -c "import duckdb"`). Each command runs as a user runs it, a
fresh process, on the demo's tyrum catalog; the commands take turns, and each figure is the median. Beside
each wall time (`NAME_s`) is the CPU seconds the process used (`cpu.NAME_s`, user + system, from
`getrusage` of the children): on a shared machine it varies far less than the wall time."""
from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from infra.settings import Settings

RUNS = 7


def cli_figures(root: Path, settings: Settings, runs: int = RUNS) -> dict[str, Any]:
    from infra.dev.demo import Demo
    home = root / "cli"
    Demo(settings, quiet=True).build("tyrum", home)  # ends with a read: the read model is current
    script = Path(sys.executable).with_name("toolcat")
    toolcat = [str(script)] if script.exists() else [sys.executable, "-m", "infra.cli"]
    commands = {"help_s": [*toolcat, "--help"],
                "resolve_s": [*toolcat, "--home", str(home), "resolve", "tool.fs.read"],
                "effective_s": [*toolcat, "--home", str(home), "effective", "agent:triage"],
                "python_s": [sys.executable, "-c", "pass"],
                "import_duckdb_s": [sys.executable, "-c", "import duckdb"]}
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            samples[name].append(_seconds(argv))
    return ({name: round(statistics.median(wall for wall, _ in times), 3) for name, times in samples.items()}
            | {"cpu": {name: round(statistics.median(cpu for _, cpu in times), 3) for name, times in samples.items()},
               "runs": runs})


def _seconds(argv: list[str]) -> tuple[float, float]:
    """The wall and CPU seconds of one run of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
