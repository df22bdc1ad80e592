"""`toolcat demo`: a short scripted story on the embedded default."""
from __future__ import annotations

from infra.context import Context


def cmd_demo(ctx: Context) -> int:
    raise NotImplementedError
