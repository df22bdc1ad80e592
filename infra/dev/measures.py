"""What every bench figure shares: the metadata of its writes and how rates and latencies are summed up."""
from __future__ import annotations

import statistics

from domain.base import Meta

META = Meta(actor="bench")


def rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else float("inf")


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    return {"median_ms": round(statistics.median(ordered), 3),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3), "samples": len(ordered)}
