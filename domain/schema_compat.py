"""Schema compatibility (Confluent Schema Registry's idea, applied to tool input schemas): whether a new
input schema keeps the calls that were valid.

`backward`: a call valid against the old schema stays valid against the new one; its breaking changes are
a new required property, a narrowed type and a removed enum value (at the top level and in nested
object properties). `forward` is the same check the other way round, `full` both, `none` neither."""
from __future__ import annotations

from typing import Any, Literal

Mode = Literal["backward", "forward", "full", "none"]
MODES: tuple[str, ...] = Mode.__args__  # type: ignore[attr-defined]


def _types(schema: dict[str, Any]) -> set[str] | None:
    declared = schema.get("type")
    if declared is None:
        return None  # any type
    types = {declared} if isinstance(declared, str) else set(declared)
    return types | ({"integer"} if "number" in types else set())


def _breaks(old: Any, new: Any, where: str) -> list[str]:
    """What a call valid against `old` may meet in `new` that refuses it."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return []
    found = []
    old_types, new_types = _types(old), _types(new)
    if new_types is not None and (old_types is None or not old_types <= new_types):
        narrowed = sorted(old_types - new_types) if old_types else ["any"]
        found.append(f"{where or 'the input'}: type narrowed (no longer {', '.join(narrowed)})")
    if "enum" in new and ("enum" not in old or set(map(repr, old["enum"])) - set(map(repr, new["enum"]))):
        removed = [v for v in old.get("enum", []) if v not in new["enum"]] or ["any value"]
        found.append(f"{where or 'the input'}: enum value(s) removed: {', '.join(map(str, removed))}")
    for name in sorted(set(new.get("required", [])) - set(old.get("required", []))):
        found.append(f"{where + '.' if where else ''}{name}: newly required property")
    old_properties, new_properties = old.get("properties", {}), new.get("properties", {})
    for name in sorted(set(old_properties) & set(new_properties)):
        found += _breaks(old_properties[name], new_properties[name], f"{where + '.' if where else ''}{name}")
    return found


def breaking_changes(old: Any, new: Any, mode: Mode) -> list[str]:
    """The changes from `old` to `new` that `mode` refuses, each naming the property; [] when accepted.
    No schema (None) and the schema `true` accept any input: they compare as the empty schema."""
    old, new = ({} if schema is None or schema is True else schema for schema in (old, new))
    found = []
    if mode in ("backward", "full"):
        found += [f"backward: {change}" for change in _breaks(old, new, "")]
    if mode in ("forward", "full"):
        found += [f"forward: {change}" for change in _breaks(new, old, "")]
    return found
