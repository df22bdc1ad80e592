"""`toolcat bench --only history`: the analysts' questions over `effective_history` (docs/analysts.md,
questions 9 and 10, and question 8 narrowed to one tool or one subject) on the bench's home, asked as
`toolcat sql` asks them (the sandboxed connection, the query checked first), each the median of a few runs.

The tool asked about is the one held by the most subjects now (a platform tool: every subject's history
has it, the largest share of any tool), the subject the agent with the most tools now."""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import duckdb

from infra.settings import Settings
from infra.wiring import open_read_model
from projections.rows import scalar
from projections.user_sql import run_query, sandbox_config

# The documented questions, with the demo's names replaced by $tool and $subject.
WHO_OVER_TIME = ("SELECT subject_kind || ':' || subject AS subject, provenance, inherited_from, exposure, valid_from, "
                 "valid_to FROM effective_history_of_tool('$tool') ORDER BY valid_from, subject")
WHAT_OVER_TIME = ("SELECT tool_id, provenance, valid_from, valid_to FROM effective_history_of_subject('$subject') "
                  "WHERE exposure = 'enabled' ORDER BY tool_id, valid_from")
# Question 8 (when a version that was enabled ended, and what followed it), on one tool's or subject's share.
LOST = ("WITH h AS (SELECT * FROM $share) SELECT h.subject_kind || ':' || h.subject AS subject, h.tool_id, "
        "h.valid_to AS lost_at, coalesce(n.exposure, 'not in its set') AS since_then, e.type AS event FROM h "
        "LEFT JOIN h AS n ON n.subject_kind = h.subject_kind AND n.subject = h.subject AND n.tool_key = h.tool_key "
        "AND n.valid_from = h.valid_to JOIN events e ON e.position = h.valid_to WHERE h.exposure = 'enabled' "
        "AND h.valid_to IS NOT NULL AND n.exposure IS DISTINCT FROM 'enabled' ORDER BY lost_at, subject, h.tool_id")
RUNS = 3


def history_figures(settings: Settings, say: Callable[[str], None]) -> dict[str, Any]:
    """The seconds each question takes on the projected home of `settings` (median of RUNS)."""
    con = open_read_model(settings, read_only=True, config=sandbox_config())
    try:
        tool = scalar(con, "SELECT tool_id FROM effective_tools GROUP BY tool_id ORDER BY count(*) DESC, tool_id "
                           "LIMIT 1")
        subject = scalar(con, "SELECT subject_kind || ':' || subject FROM effective_tools WHERE subject_kind = "
                              "'agent' GROUP BY ALL ORDER BY count(*) DESC, 1 LIMIT 1")
        questions = {
            "tool": WHO_OVER_TIME.replace("$tool", tool),
            "subject": WHAT_OVER_TIME.replace("$subject", subject),
            "tool_join": LOST.replace("$share", f"effective_history_of_tool('{tool}')"),
            "subject_join": LOST.replace("$share", f"effective_history_of_subject('{subject}')"),
        }
        figures: dict[str, Any] = {"asked": {"tool_id": tool, "subject": subject},
                                   "events": scalar(con, "SELECT count(*) FROM events")}
        for name, query in questions.items():
            figures[name] = _timed(con, query)
            say(f"bench: history {name}: {figures[name]['seconds']} s ({figures[name]['cpu_seconds']} s of CPU), "
                f"{figures[name]['rows']} rows")
        return figures
    finally:
        con.close()


def _timed(con: duckdb.DuckDBPyConnection, query: str) -> dict[str, Any]:
    """The median wall time of RUNS runs, and the CPU time of the process's threads over it (on a busy machine
    the wall time says more about the neighbours than about the query)."""
    seconds, cpu, rows = [], [], 0
    for _ in range(RUNS):
        started, started_cpu = time.perf_counter(), time.process_time()
        rows = run_query(con, query, timeout_seconds=60, row_limit=10_000_000).num_rows
        seconds.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    return {"seconds": round(statistics.median(seconds), 3), "cpu_seconds": round(statistics.median(cpu), 3),
            "rows": rows}
