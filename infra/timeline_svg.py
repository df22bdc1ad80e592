"""One alias's deprecation timeline as an inline SVG picture, with a legend.

Events are placed along a line by their position: the deprecation and the milestones above it, the removal
steps below; each label says the event's position and the day it was recorded (UTC). Labels are laid out so that none can overlap another or the legend: each label's box is
computed (its text is drawn with exactly that length, `textLength`), and labels that would collide go to
the next lane, further from the line. `timeline_layout` returns the boxes, so a test can check them.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from html import escape
from typing import Any

from domain.grammar import visible

WIDTH = 900
MARGIN = 12
AXIS_LEFT, AXIS_RIGHT = 70, WIDTH - 70
FONT_SIZE = 11
CHAR_WIDTH = 6.7  # a monospace advance at 11px (0.6em) with a little room; text is drawn at this length
ASCENT, DESCENT = 10, 3  # a label's box around its baseline
LANE = 17  # from one lane of labels to the next (4px between boxes)
GAP = 8  # the least horizontal room between two labels in one lane
CLEARANCE = 14  # between the line and the nearest lane

# Each kind of event: its colour, what the legend says, and its side of the line. Red is kept for findings,
# so no event is drawn in it: the retirement (steps 3 and 4) is an expected step of the path.
KINDS = {
    "deprecated": ("#9a6700", "deprecated: the window opens", "up"),
    "milestone": ("#2f6fdf", "milestone, with its release", "up"),
    "confirmation": ("#1a7f37", "steps 1, 2: confirmed before retirement", "down"),
    "retirement": ("#6e40c9", "retirement: performs steps 3, 4", "down"),
    "cleanup": ("#0e7490", "step 5: cleanup after retirement", "down"),
}
STEP_KINDS = {1: "confirmation", 2: "confirmation", 3: "retirement", 4: "retirement", 5: "cleanup"}


@dataclass(frozen=True)
class Box:
    left: float
    top: float
    width: float
    height: float

    @property
    def right(self) -> float:
        return self.left + self.width

    @property
    def bottom(self) -> float:
        return self.top + self.height

    def overlaps(self, other: Box) -> bool:
        return (self.left < other.right and other.left < self.right
                and self.top < other.bottom and other.top < self.bottom)


@dataclass(frozen=True)
class Mark:
    position: int
    kind: str
    text: str
    day: str | None = None  # YYYY-MM-DD, when the entry says when the event was recorded

    @property
    def label(self) -> str:
        return f"{self.text} @{self.position}" + (f" {self.day}" if self.day else "")


def _day(recorded: Mapping[str, Any] | None) -> str | None:
    """The day (UTC) an entry's event was recorded, from its ISO `recorded_at`."""
    found = (recorded or {}).get("recorded_at")
    return str(found)[:10] if found else None


@dataclass(frozen=True)
class Placed:
    """A mark where it is drawn: its point on the line (x) and its label's box."""
    mark: Mark
    x: float
    box: Box

    @property
    def baseline(self) -> float:
        return self.box.top + ASCENT


@dataclass(frozen=True)
class Layout:
    width: float
    height: float
    axis_y: float
    legend: list[tuple[str, Box]]  # kind, the box of its swatch and text
    labels: list[Placed]

    def boxes(self) -> list[Box]:
        return [box for _, box in self.legend] + [placed.box for placed in self.labels]


def text_width(text: str) -> float:
    return round(len(text) * CHAR_WIDTH, 1)


def marks(entry: Mapping[str, Any]) -> list[Mark]:
    """The events of an `audit alias`-shaped entry; the retirement's steps 3 and 4 are one mark."""
    window = entry.get("window") or {}
    found = [Mark(window["opened_position"], "deprecated", "deprecated", _day(entry.get("deprecated")))
             ] if window.get("opened_position") else []
    # Labels are shown with hidden characters as escapes, and measured as shown.
    found += [Mark(m["position"], "milestone", visible(f"{m['name'].replace('_', ' ')} {m['release']}"), _day(m))
              for m in entry["milestones"]]
    by_position: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for step in entry["steps"]:
        by_position.setdefault((step["position"], STEP_KINDS[step["step"]]), []).append(step)
    for (position, kind), recorded in by_position.items():
        numbers = sorted(step["step"] for step in recorded)
        steps = f"step{'s' if len(numbers) > 1 else ''} {', '.join(map(str, numbers))}"
        retired = window.get("retired_release")
        text = f"retired {retired} ({steps})" if kind == "retirement" and retired else steps
        found.append(Mark(position, kind, visible(text), _day(recorded[0])))
    return sorted(found, key=lambda m: (m.position, list(KINDS).index(m.kind)))


def _x(position: int, low: int, high: int) -> float:
    if high == low:
        return (AXIS_LEFT + AXIS_RIGHT) / 2
    return round(AXIS_LEFT + (position - low) * (AXIS_RIGHT - AXIS_LEFT) / (high - low), 1)


def _lanes(items: Iterable[tuple[Mark, float]]) -> list[tuple[Mark, float, float, int]]:
    """(mark, x, label left, lane): each label in the lane nearest the line where it fits (greedy interval
    partitioning by left edge, which uses as few lanes as any layout could)."""
    ends: list[float] = []
    placed = []
    for mark, x in sorted(items, key=lambda item: _left(item[0], item[1])):
        left = _left(mark, x)
        lane = next((i for i, end in enumerate(ends) if end + GAP <= left), len(ends))
        if lane == len(ends):
            ends.append(0.0)
        ends[lane] = left + text_width(mark.label)
        placed.append((mark, x, left, lane))
    return placed


def _left(mark: Mark, x: float) -> float:
    """The label centred on its point, kept inside the picture."""
    width = text_width(mark.label)
    return round(min(max(x - width / 2, MARGIN), WIDTH - MARGIN - width), 1)


def _legend() -> tuple[list[tuple[str, Box]], int]:
    """The legend's items left to right, wrapped into rows; returns them and the number of rows."""
    items, left, row = [], MARGIN, 0
    for kind, (_, text, _) in KINDS.items():
        width = 14 + text_width(text)
        if left + width > WIDTH - MARGIN:
            left, row = MARGIN, row + 1
        items.append((kind, Box(left, MARGIN + row * LANE, width, ASCENT + DESCENT)))
        left += width + 2 * GAP
    return items, row + 1


def timeline_layout(entry: Mapping[str, Any]) -> Layout:
    """Where everything of the timeline goes (see the module's docstring)."""
    found = marks(entry)
    low, high = min((m.position for m in found), default=0), max((m.position for m in found), default=0)
    sides = {side: _lanes((m, _x(m.position, low, high)) for m in found if KINDS[m.kind][2] == side)
             for side in ("up", "down")}
    up_lanes = max((lane + 1 for *_, lane in sides["up"]), default=0)
    down_lanes = max((lane + 1 for *_, lane in sides["down"]), default=0)
    legend, legend_rows = _legend()
    axis_y = MARGIN + legend_rows * LANE + 10 + up_lanes * LANE + CLEARANCE
    labels = []
    for mark, x, left, lane in sides["up"]:
        bottom = axis_y - CLEARANCE - lane * LANE
        labels.append(Placed(mark, x, Box(left, bottom - ASCENT - DESCENT, text_width(mark.label), ASCENT + DESCENT)))
    for mark, x, left, lane in sides["down"]:
        top = axis_y + CLEARANCE + lane * LANE
        labels.append(Placed(mark, x, Box(left, top, text_width(mark.label), ASCENT + DESCENT)))
    height = axis_y + CLEARANCE + down_lanes * LANE + MARGIN
    return Layout(WIDTH, height, axis_y, legend, sorted(labels, key=lambda p: (p.mark.position, p.box.left)))


def _n(value: float) -> str:
    """A coordinate as the picture writes it: one decimal at most."""
    return f"{value:.1f}".removesuffix(".0")


def _text(x: float, baseline: float, text: str, colour: str, css: str) -> str:
    return (f'<text x="{_n(x)}" y="{_n(baseline)}" fill="{colour}" class="{css}" textLength="{_n(text_width(text))}" '
            f'lengthAdjust="spacingAndGlyphs">{escape(text)}</text>')


def _leader(placed: Placed, axis_y: float, colour: str) -> str:
    """From the mark's point on the line to the nearest point of its label."""
    box = placed.box
    end_x = min(max(placed.x, box.left), box.right)
    end_y = box.bottom if box.bottom <= axis_y else box.top
    start_y = axis_y - 5 if end_y < axis_y else axis_y + 5
    return (f'<line x1="{_n(placed.x)}" y1="{_n(start_y)}" x2="{_n(end_x)}" y2="{_n(end_y)}" stroke="{colour}" '
            'stroke-opacity="0.6"/>')


def timeline_svg(entry: Mapping[str, Any]) -> str:
    """One alias's timeline (an `audit alias`-shaped entry; `window.opened_position`, when given, marks
    the deprecation), as an inline SVG with its legend."""
    layout = timeline_layout(entry)
    if not layout.labels:
        return "<p>No milestones or steps recorded yet.</p>"
    axis = (f'<line x1="{AXIS_LEFT}" y1="{_n(layout.axis_y)}" x2="{AXIS_RIGHT}" y2="{_n(layout.axis_y)}" '
            'stroke="#8a93a6" stroke-width="2"/>')
    leaders, points, labels = [], [], []
    for placed in layout.labels:
        colour, mark = KINDS[placed.mark.kind][0], placed.mark
        leaders.append(_leader(placed, layout.axis_y, colour))
        points.append(f'<circle cx="{_n(placed.x)}" cy="{_n(layout.axis_y)}" r="5" fill="{colour}" '
                      f'data-position="{mark.position}" data-kind="{mark.kind}"/>')
        box = placed.box
        labels.append(f'<rect x="{_n(box.left - 1)}" y="{_n(box.top - 1)}" width="{_n(box.width + 2)}" '
                      f'height="{_n(box.height + 2)}" fill="#ffffff" fill-opacity="0.85"/>'
                      + _text(box.left, placed.baseline, mark.label, colour, "mark"))
    legend = [f'<rect x="{_n(box.left)}" y="{_n(box.top + 1.5)}" width="10" height="10" rx="5" '
              f'fill="{KINDS[kind][0]}"/>' + _text(box.left + 14, box.top + ASCENT, KINDS[kind][1], "#1d2330", "legend")
              for kind, box in layout.legend]
    return (f'<svg role="img" aria-label="timeline of {escape(visible(str(entry["alias"])))}" '
            f'viewBox="0 0 {layout.width} {_n(layout.height)}" width="100%" xmlns="http://www.w3.org/2000/svg" '
            f'font-family="ui-monospace,DejaVu Sans Mono,Menlo,Consolas,monospace" font-size="{FONT_SIZE}">'
            f'{axis}{"".join(leaders)}{"".join(points)}{"".join(labels)}'
            f'<g class="legend">{"".join(legend)}</g></svg>')
