"""How subjects (units and agents: domain/unit.py, domain/agent.py) and the times changes take effect
are written."""
from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Literal

from domain.errors import UsageError
from domain.grammar import shown

SubjectKind = Literal["unit", "agent"]
DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_subject(text: str) -> tuple[SubjectKind, str]:
    """`unit:NAME` or `agent:NAME`."""
    kind, sep, name = text.partition(":")
    if not sep or kind not in ("unit", "agent") or not name:
        raise UsageError(f"subject {text!r} must be unit:NAME or agent:NAME", subject=text)
    return kind, name  # type: ignore[return-value]


def parse_effective_at(text: str | None) -> str | None:
    """The time a change takes effect (`effective_at`): an ISO 8601 time, stored in UTC with
    microseconds; None means when it is recorded."""
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")
    except (ValueError, OverflowError) as error:  # OverflowError: in UTC it falls outside years 1-9999
        raise UsageError(f"the time a change takes effect, {shown(text)}, is not an ISO 8601 time "
                         "between the years 1 and 9999 (e.g. 2026-03-01T09:00:00Z)",
                         effective_at=text[:200]) from error


def as_of_instant(text: str) -> str:
    """The instant an --as-of names: a date alone means the end of that day in UTC (everything recorded on
    it counts), never its first microsecond."""
    if DATE_ONLY.fullmatch(text):
        return f"{text}T23:59:59.999999+00:00"
    return text
