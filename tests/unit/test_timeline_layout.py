"""The audit timeline's layout: no label overlaps another or the legend, every box stays inside the
picture and on its side of the line, and no event is drawn in the red kept for findings."""
from __future__ import annotations

import random
import re
from itertools import combinations
from typing import Any

import pytest

from domain.window import MILESTONES
from infra.timeline_svg import KINDS, Layout, marks, text_width, timeline_layout, timeline_svg

FINDING_RED = "#b42318"


def entry(milestones: list[tuple[str, int]], steps: list[tuple[int, int]], opened: int | None = None,
          retired: str | None = "1.3.0") -> dict[str, Any]:
    return {"alias": "acme.old", "window": {"opened_position": opened, "retired_release": retired},
            "milestones": [{"name": n, "release": "1.2.0-rc.1+build.20261122", "position": p} for n, p in milestones],
            "steps": [{"step": s, "position": p} for s, p in steps]}


def crowded(far: int) -> dict[str, Any]:
    """Every event within a few positions, and (with `far`) one far away, which squeezes them together."""
    return entry([(name, 10 + i) for i, name in enumerate(MILESTONES)], [(1, 14), (2, 15), (3, 16), (4, 16), (5, far)],
                 opened=9)


def random_entry(rng: random.Random) -> dict[str, Any]:
    positions = sorted(rng.sample(range(1, rng.choice([12, 200, 100_000])), 9))
    chosen = rng.sample(MILESTONES, rng.randint(0, 4))
    steps = [(1, positions[5]), (2, positions[6]), (3, positions[7]), (4, positions[7]), (5, positions[8])]
    return entry(list(zip(chosen, positions[1:5])), steps[:rng.randint(0, 5)],
                 opened=positions[0] if rng.random() < 0.8 else None)


def check(layout: Layout) -> None:
    boxes = layout.boxes()
    for a, b in combinations(boxes, 2):
        assert not a.overlaps(b), (a, b)
    for box in boxes:
        assert 0 <= box.left and box.right <= layout.width and 0 <= box.top and box.bottom <= layout.height, box
    for placed in layout.labels:
        side = KINDS[placed.mark.kind][2]
        assert placed.box.bottom < layout.axis_y - 5 if side == "up" else placed.box.top > layout.axis_y + 5
        assert placed.box.width == text_width(placed.mark.label)
    legend_bottom = max(box.bottom for _, box in layout.legend)
    assert all(placed.box.top > legend_bottom for placed in layout.labels)


@pytest.mark.parametrize("far", [17, 500, 1_000_000])
def test_crowded_labels_never_overlap(far: int) -> None:
    layout = timeline_layout(crowded(far))
    check(layout)
    assert len(layout.labels) == 9  # the deprecation, 4 milestones, steps 1, 2, the retirement, step 5


def test_random_timelines_never_overlap() -> None:
    rng = random.Random(20261122)
    for _ in range(300):
        check(timeline_layout(random_entry(rng)))


def test_the_retirement_is_one_mark_for_steps_3_and_4_and_the_legend_names_every_kind() -> None:
    found = marks(crowded(17))
    retirement = [m for m in found if m.kind == "retirement"]
    assert [(m.position, m.label) for m in retirement] == [(16, "retired 1.3.0 (steps 3, 4) @16")]
    svg = timeline_svg(crowded(17))
    for colour, legend, _ in KINDS.values():
        assert f'fill="{colour}"' in svg and f">{legend}</text>" in svg
    assert svg.count("<circle") == 9


def _red(colour: str) -> bool:
    red, green, blue = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return red > 150 and red > 2 * green and red > 2 * blue


def test_no_event_is_drawn_in_red() -> None:
    assert _red(FINDING_RED)
    assert not [kind for kind, (colour, _, _) in KINDS.items() if _red(colour)]
    svg = timeline_svg(crowded(500))
    assert not [c for c in re.findall(r'(?:fill|stroke)="(#[0-9a-f]{6})"', svg) if _red(c)]


def test_nothing_to_draw() -> None:
    assert timeline_svg(entry([], [])) == "<p>No milestones or steps recorded yet.</p>"
