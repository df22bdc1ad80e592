"""A structural validity check of JSON Schema documents (a draft 2020-12 / draft-07 subset).

It decides whether a tool's input schema is usable at all (an invalid one disables the tool), so it
only checks the shape of the keywords it knows; unknown keywords are allowed, as the spec allows.
"""
from __future__ import annotations

import re

JSON_TYPES = ("null", "boolean", "object", "array", "number", "string", "integer")

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMAS = (
    "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
    "additionalItems", "unevaluatedItems", "unevaluatedProperties",
)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_NUMBERS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_COUNTS = (
    "minLength", "maxLength", "minItems", "maxItems",
    "minProperties", "maxProperties", "minContains", "maxContains",
)


def schema_problems(schema: object) -> list[str]:
    """Human-readable problems, each prefixed with a JSON pointer to where it is; [] means valid."""
    return _problems(schema, "")


def _pointer(path: str, key: object) -> str:
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"


def _is_number(value: object) -> bool:
    # bool is an int in Python but never a number in JSON.
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: object) -> bool:
    # JSON Schema treats 2.0 as an integer: only the mathematical value matters.
    return _is_number(value) and float(value).is_integer() and value >= 0


def _problems(schema: object, path: str) -> list[str]:
    if isinstance(schema, bool):
        return []
    if not isinstance(schema, dict):
        return [f"{path or '/'}: {schema!r} is not a schema (expected an object or a boolean)"]
    problems: list[str] = []

    def bad(key: str, text: str) -> None:
        problems.append(f"{_pointer(path, key)}: {text}")

    for key, value in schema.items():
        here = _pointer(path, key)
        if key == "type":
            problems += _type_problems(value, here)
        elif key in _SCHEMA_MAPS:
            if not isinstance(value, dict):
                bad(key, "must be an object whose values are schemas")
                continue
            for name, sub in value.items():
                if key == "patternProperties" and not _compiles(name):
                    problems.append(f"{_pointer(here, name)}: {name!r} is not a valid regular expression")
                problems += _problems(sub, _pointer(here, name))
        elif key in _SCHEMAS:
            problems += _problems(value, here)
        elif key == "items":
            # draft-07 tuple form: a list of schemas, one per position
            if isinstance(value, list):
                for i, sub in enumerate(value):
                    problems += _problems(sub, _pointer(here, i))
            else:
                problems += _problems(value, here)
        elif key in _SCHEMA_LISTS:
            if not isinstance(value, list) or not value:
                bad(key, "must be a non-empty array of schemas")
                continue
            for i, sub in enumerate(value):
                problems += _problems(sub, _pointer(here, i))
        elif key == "required":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                bad(key, "must be an array of strings")
            elif len(set(value)) != len(value):
                bad(key, "must not repeat a property name")
        elif key == "enum":
            if not isinstance(value, list) or not value:
                bad(key, "must be a non-empty array")
        elif key in _NUMBERS:
            if not _is_number(value):
                bad(key, f"{value!r} is not a number")
        elif key == "multipleOf":
            if not _is_number(value) or value <= 0:
                bad(key, f"{value!r} is not a number greater than 0")
        elif key in _COUNTS:
            if not _is_count(value):
                bad(key, f"{value!r} is not a non-negative integer")
        elif key == "uniqueItems":
            if not isinstance(value, bool):
                bad(key, f"{value!r} is not a boolean")
        elif key == "pattern":
            if not isinstance(value, str) or not _compiles(value):
                bad(key, f"{value!r} is not a valid regular expression")
    return problems


def _type_problems(value: object, here: str) -> list[str]:
    if isinstance(value, str):
        return [] if value in JSON_TYPES else [f"{here}: {value!r} is not a JSON type"]
    if not isinstance(value, list) or not value:
        return [f"{here}: must be a JSON type name or a non-empty array of them"]
    problems = [f"{here}: {v!r} is not a JSON type" for v in value if v not in JSON_TYPES]
    if not problems and len(set(value)) != len(value):
        problems.append(f"{here}: must not repeat a type")
    return problems


def _compiles(pattern: str) -> bool:
    # Python's re is close enough to ECMA-262 for catching broken patterns.
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True
