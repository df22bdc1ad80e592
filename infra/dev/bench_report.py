"""`toolcat bench`'s readable answer and its verdict: the budget as a table (figure, measured value,
met or not), and under `--strict` an exit code of its own when a measured figure misses its target."""
from __future__ import annotations

from typing import Any

from infra.cli.tables import Table

# `bench --strict`: a measured figure missed the design's budget (not a failure of the command itself).
BUDGET_MISSED_EXIT = 8


def missed(document: dict[str, Any]) -> list[str]:
    """The budget figures measured in this run that missed their target (unmeasured ones are not)."""
    return [name for name, figure in document["budget"].items() if figure["met"] is False]


def budget_table(document: dict[str, Any]) -> Table:
    def shown(value: Any) -> str:
        return "-" if value is None else f"{value:,}" if isinstance(value, (int, float)) else str(value)
    rows = [[name, shown(figure["value"]),
             "not measured" if figure["met"] is None else "met" if figure["met"] else "MISSED"]
            for name, figure in document["budget"].items()]
    return Table(f"budget, {document['events']} events ({document['machine']['cores']} cores)",
                 ["figure and target", "measured", "result"], rows)


def bench_summary(document: dict[str, Any], strict: bool) -> tuple[list[Any], int]:
    """The readable blocks and the exit code of a bench run."""
    failed = missed(document)
    verdict = (f"{len(failed)} figure(s) missed the budget: {', '.join(failed)}" if failed
               else "every measured figure met the budget")
    exit_code = BUDGET_MISSED_EXIT if strict and failed else 0
    if strict and failed:
        verdict += f" (--strict: exit {BUDGET_MISSED_EXIT})"
    return [budget_table(document), verdict, "(every figure in full: the same command with --json)"], exit_code
