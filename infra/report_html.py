"""The audit report as one self-contained HTML page: the integrity of the history, then per alias its
timeline picture (inline SVG, `infra/timeline_svg.py`), every rule checked with its result and evidence,
and the configuration that still names it.

Everything it shows from the history is HTML-escaped, and control characters and bidi controls are
shown as visible escapes (`\u202e`), so an event recorded with one can never make the page show
something other than what was recorded."""
from __future__ import annotations

import unicodedata
from html import escape
from typing import Any

from domain.grammar import escape_hidden, hidden_character, visible
from infra.timeline_svg import timeline_svg

__all__ = ["render", "timeline_svg"]

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1d2330;max-width:70rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2.2rem;border-bottom:1px solid #d6dae3;padding-bottom:.3rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}td,th{border:1px solid #d6dae3;padding:.3rem .55rem;
text-align:left;vertical-align:top}th{background:#f2f4f8}.state,.status{font-weight:600;padding:.1rem .4rem;
border-radius:.3rem;margin-left:.3rem}.retired{background:#ede4fb}.deprecated{background:#fff3cd}
.complete,.met,.verified{color:#1a7f37}.findings,.not-met,.altered,.finding{color:#b42318}
.pending,.window-open,.unverified{color:#9a6700}
.hidden-char{font-family:ui-monospace,monospace;background:#fde2e1;color:#b42318;border-radius:.2rem;padding:0 .15rem}
"""
RESULT_CLASSES = {"met": "met", "not met": "not-met", "pending": "pending"}


def _html(value: Any) -> str:
    """Element content: escaped, each hidden character a marked escape that names it on hover."""
    text = "" if value is None else str(value)
    if text.isascii() and text.isprintable():
        return escape(text)
    return "".join(
        f'<span class="hidden-char" title="U+{ord(c):04X} {escape(unicodedata.name(c, "control"))}">'
        f"{escape(escape_hidden(c))}</span>" if hidden_character(c, multiline=True) else escape(c) for c in text)


def _attr(value: Any) -> str:
    """An attribute value or SVG text: escaped, hidden characters as plain escapes."""
    return escape(visible("" if value is None else str(value)))


def _table(columns: list[str], rows: list[list[Any]]) -> str:
    """A table; a cell given as (value, css class) is marked with that class."""
    def cell(value: Any) -> str:
        text, css = value if isinstance(value, tuple) else (value, None)
        return f'<td class="{_attr(css)}">{_html(text)}</td>' if css else f"<td>{_html(text)}</td>"
    head = "".join(f"<th>{_html(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(cell(value) for value in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _integrity(checked: dict[str, Any] | None) -> str:
    """What `audit verify` found, and what it compared the chain with."""
    if checked is None:
        return '<p class="unverified">The integrity of the history was not checked.</p>'
    verdict = checked["verdict"]
    if verdict == "altered":
        return (f'<p class="altered"><strong>Altered:</strong> {_html(checked["error"]["message"])} (at position '
                f'{_html(checked["position"])}).</p>')
    model, seals = checked["compared"]["read_model"], checked["compared"]["seals"]
    kept = checked["compared"]["expected_head"]
    rows = [["hash chain (the event store)", f"{checked['events']} events, head {checked['head']}",
             checked["position"]],
            ["read model's recorded hashes", f"{model['events']} compared" if model["present"] else "absent",
             model["through"]],
            ["seals", f"{seals['count']} compared" if seals["count"] else "none", seals["latest"]]]
    if kept is not None:
        rows.append(["head kept outside the store", kept["hash"], kept["position"]])
    sentence = ("the chain holds and agrees with everything compared" if verdict == "verified"
                else "nothing to compare against: the chain agrees only with itself")
    return (f'<p class="{_attr(verdict)}"><strong>{_html(verdict.capitalize())}:</strong> {_html(sentence)}, '
            f'up to position {_html(checked["position"])}.</p>'
            + _table(["compared", "what", "position"], rows))


def _verdict(entry: dict[str, Any]) -> str:
    status = entry["status"]
    if status == "findings":
        return "".join(f'<li class="finding">{_html(f)}</li>' for f in entry["findings"])
    if status == "complete":
        return '<li class="complete">every rule of the deprecation window and removal path was met</li>'
    if status == "not deprecated":
        return '<li class="pending">a supported alias: no deprecation window is open</li>'
    recorded = len(entry["milestones"])
    return (f'<li class="window-open">window open: {recorded} of 4 milestones recorded, not retired yet; '
            "no rule has been broken so far</li>")


def _uses(entry: dict[str, Any]) -> str:
    if not entry["uses"]:
        return "<p>No allowlist, grant, connector, image, route rule or secret reference names it any more.</p>"
    rows = [[u["kind"], u["holder"], u["id"], (u["lifecycle"], "not-met" if u["lifecycle"] == "retired" else "pending"),
             u["position"]] for u in entry["uses"]]
    return _table(["kind", "holder", "names", "which is", "since position"], rows)


def _flags(entry: dict[str, Any]) -> str:
    """How the path was recorded (late milestones, a back-dated retirement): accepted, for a person to judge."""
    flags = entry.get("flags") or []
    if not flags:
        return ""
    items = "".join(f'<li class="pending">{_html(f["message"])} (position {_html(f["position"])})</li>' for f in flags)
    return f"<h3>Flags</h3><ul>{items}</ul>"


def _section(entry: dict[str, Any]) -> str:
    window = entry["window"]
    rules = [[r["rule"], (r["result"], RESULT_CLASSES[r["result"]]), r["evidence"], r["position"]]
             for r in entry["rules"]]
    closed = f"retired in {window['retired_release']}" if window["closed"] else "still open"
    return f"""
<section id="{_attr(entry['alias'])}"><h2>{_html(entry['alias'])} → {_html(entry['canonical_id'])}
<span class="state {_attr(entry['state'])}">{_html(entry['state'])}</span>
<span class="status {_attr(entry['status'].replace(' ', '-'))}">{_html(entry['status'])}</span></h2>
<p>Window opened in {_html(window['opened_release'] or '—')}; earliest removal
{_html(window['earliest_removal_release'] or '—')}; {_html(closed)}. Canonical replacement introduced in
{_html(entry.get('canonical_introduced_release') or '—')}.</p>
{timeline_svg(entry)}
<h3>Rules checked</h3>{_table(['rule', 'result', 'evidence', 'position'], rules)}
<h3>Still named by</h3>{_uses(entry)}{_flags(entry)}
<h3>Verdict</h3><ul>{_verdict(entry)}</ul></section>"""


def render(report: dict[str, Any]) -> str:
    entries = report["aliases"]
    counts = {s: sum(e["status"] == s for e in entries) for s in ("complete", "window open", "findings")}
    flagged = sum(len(e["uses"]) for e in entries)
    recorded = sum(len(e.get("flags") or []) for e in entries)
    late = f" {recorded} flag(s) on how removal paths were recorded." if recorded else ""
    body = "".join(_section(e) for e in entries) or "<p>No deprecated or retired aliases.</p>"
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>toolcat audit report</title>"
            f"<style>{STYLE}</style></head><body><h1>Deprecation audit report</h1>"
            f"<p>History up to position {_html(report['position'])}; {len(entries)} alias(es): "
            f"{counts['complete']} complete, {counts['window open']} with the window open, "
            f"{counts['findings']} with findings; {flagged} use(s) of deprecated or retired IDs flagged.{late}</p>"
            f'<div id="integrity"><h2>Integrity of the history</h2>{_integrity(report.get("integrity"))}</div>'
            f"{body}</body></html>")
