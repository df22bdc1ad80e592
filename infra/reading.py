"""Read answers both entry points give alike: a subject's current effective set (`effective SUBJECT`, the
server's watch and kept answers), and the deprecation audit report with its integrity section."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from domain.errors import IntegrityFailure, UnknownSubject
from domain.subjects import parse_subject
from projections import queries

if TYPE_CHECKING:
    import duckdb


def current_document(con: duckdb.DuckDBPyConnection, subject: str) -> dict[str, Any]:
    """`effective SUBJECT --json` for now: the subject, the position of its set's last change (its ETag),
    the read model's position and the current set."""
    kind, name = parse_subject(subject)
    found = queries.current_set(con, f"{kind}:{name}", (kind, name))
    if found is None:
        near = queries.nearest_subject(con, kind, name)
        raise UnknownSubject(f"no {kind} '{name}'" + (f"; did you mean '{near}'?" if near else ""), subject=subject,
                             **({"did_you_mean": near} if near else {}))
    return {"subject": subject, "position": found[1], "read_model_position": found[0], "tools": found[2]}


def altered(failure: IntegrityFailure) -> dict[str, Any]:
    """The report's integrity section when `audit verify` found the history altered."""
    return {"ok": False, "verdict": "altered", "position": failure.details.get("position"),
            "error": failure.as_document()["error"]}


def report_document(con: Any, alias: str | None, checked: dict[str, Any]) -> dict[str, Any]:
    """The deprecation audit report (of one alias when given, which must exist) with its integrity section."""
    from projections.audit_report import audit_report
    return audit_report(con, alias, checked)


def report_text(report: dict[str, Any], form: str) -> str:
    from infra.report_html import render
    return render(report) if form == "html" else json.dumps(report, indent=2, default=str)
