"""The audit report as one self-contained HTML page, with a timeline picture (inline SVG) per alias."""
from __future__ import annotations

from html import escape
from typing import Any

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem;color:#1d2330;max-width:70rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2.2rem;border-bottom:1px solid #d6dae3;padding-bottom:.3rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}td,th{border:1px solid #d6dae3;padding:.3rem .55rem;
text-align:left;vertical-align:top}th{background:#f2f4f8}.state{font-weight:600;padding:.1rem .4rem;border-radius:.3rem}
.retired{background:#fde2e1}.deprecated{background:#fff3cd}.ok{color:#1a7f37}.finding{color:#b42318}
svg text{font-size:11px;font-family:inherit}
"""


def _timeline(entry: dict[str, Any]) -> str:
    """Milestones above the line, removal steps below, placed by event position."""
    marks = [(m["position"], m["name"].replace("_", " "), m["release"], "#2f6fdf", "up") for m in entry["milestones"]]
    marks += [(s["position"], f"step {s['step']}", "", "#b42318" if s["step"] in (3, 4) else "#1a7f37", "down")
              for s in entry["steps"]]
    if not marks:
        return "<p>No milestones or steps recorded yet.</p>"
    low, high = min(m[0] for m in marks), max(m[0] for m in marks)
    width, left, right = 900, 60, 60
    span = max(high - low, 1)
    shapes = [f'<line x1="{left}" y1="110" x2="{width - right}" y2="110" stroke="#8a93a6" stroke-width="2"/>']
    for index, (position, label, release, colour, side) in enumerate(sorted(marks)):
        x = left + (position - low) * (width - left - right) / span
        lift = 20 + (index % 3) * 22
        y = 110 - lift if side == "up" else 110 + lift
        anchor = y - 4 if side == "up" else y + 12
        shapes.append(f'<line x1="{x:.1f}" y1="110" x2="{x:.1f}" y2="{y}" stroke="{colour}"/>'
                      f'<circle cx="{x:.1f}" cy="110" r="5" fill="{colour}" data-position="{position}"/>'
                      f'<text x="{x:.1f}" y="{anchor}" text-anchor="middle" fill="{colour}" class="mark">'
                      f'{escape(label)} {escape(release)} @{position}</text>')
    return (f'<svg role="img" aria-label="timeline of {escape(entry["alias"])}" viewBox="0 0 {width} 220" '
            f'width="100%" height="220" xmlns="http://www.w3.org/2000/svg">{"".join(shapes)}</svg>')


def _rows(items: list[dict[str, Any]], columns: list[str]) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(item.get(c) if item.get(c) is not None else ''))}</td>"
                                    for c in columns) + "</tr>" for item in items)
    return f"<table><tr>{head}</tr>{body}</table>"


def render(report: dict[str, Any]) -> str:
    sections = []
    for entry in report["aliases"]:
        window = entry["window"]
        findings = ("".join(f'<li class="finding">{escape(f)}</li>' for f in entry["findings"])
                    or '<li class="ok">every rule of the deprecation window and removal path was met</li>')
        sections.append(f"""
<section id="{escape(entry['alias'])}"><h2>{escape(entry['alias'])} → {escape(entry['canonical_id'])}
<span class="state {escape(entry['state'])}">{escape(entry['state'])}</span></h2>
<p>Window opened in {escape(str(window['opened_release'] or '—'))}; earliest removal
{escape(str(window['earliest_removal_release'] or '—'))}; {'closed in ' + escape(str(window['retired_release']))
 if window['closed'] else 'still open'}. Canonical replacement introduced in
{escape(str(entry.get('canonical_introduced_release') or '—'))}.</p>
{_timeline(entry)}
<h3>Milestones</h3>{_rows(entry['milestones'], ['name', 'release', 'position', 'evidence'])}
<h3>Removal steps</h3>{_rows(entry['steps'], ['step', 'position', 'recorded_at', 'actor', 'evidence'])}
<h3>Findings</h3><ul>{findings}</ul></section>""")
    body = "".join(sections) or "<p>No deprecated or retired aliases.</p>"
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>toolcat audit report</title>"
            f"<style>{_STYLE}</style></head><body><h1>Deprecation audit report</h1>"
            f"<p>History up to position {report['position']}; {len(report['aliases'])} alias(es).</p>"
            f"{body}</body></html>")
