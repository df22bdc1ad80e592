"""The words of a tool's static taxonomy metadata: its group, tier, visibility, source and risk.

Apart from the value objects (domain/values.py) so that the command line offers them as choices without
importing pydantic (`toolcat --help` answers at once)."""
from __future__ import annotations

from typing import Literal

Group = Literal["core", "retrieval", "memory", "environment", "node", "orchestration", "extension"]
Tier = Literal["default", "advanced"]
Visibility = Literal["public", "internal", "runtime_only"]
Source = Literal["builtin", "builtin_mcp", "mcp", "plugin", "connector", "image"]
Risk = Literal["read_only", "safe_create", "safe_update", "destructive_update", "destructive_delete"]
AliasLifecycle = Literal["alias", "deprecated", "retired"]

GROUPS: tuple[str, ...] = Group.__args__  # type: ignore[attr-defined]
TIERS: tuple[str, ...] = Tier.__args__  # type: ignore[attr-defined]
VISIBILITIES: tuple[str, ...] = Visibility.__args__  # type: ignore[attr-defined]
SOURCES: tuple[str, ...] = Source.__args__  # type: ignore[attr-defined]
RISKS: tuple[str, ...] = Risk.__args__  # type: ignore[attr-defined]
