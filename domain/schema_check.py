"""Whether a tool's input schema is a valid JSON Schema: its metaschema check, by `jsonschema`.

An invalid input schema disables the tool wherever it is exposed. The schema is checked against the
metaschema of the draft its `$schema` names, and against draft 2020-12 when it names none (or one
`jsonschema` does not know). Keywords no vocabulary defines are allowed, as the specification allows.
"""
from __future__ import annotations

from collections.abc import Iterable

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import best_match
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

# Of the metaschemas' formats only `regex` (a `pattern` or a `patternProperties` key that does not
# compile) decides validity here: the others are checked only where optional packages are installed,
# and the answer must not depend on the machine that registered the tool.
_FORMATS = FormatChecker(formats=("regex",))

def schema_problems(schema: object) -> list[str]:
    """Human-readable problems, each prefixed with a JSON pointer to where it is; [] means valid."""
    if not isinstance(schema, (dict, bool)):
        return [f"/: {schema!r} is not a schema (expected an object or a boolean)"]
    checker = _metaschema_checker(schema)
    # A fault under `anyOf` (e.g. `type`: one name or a list of names) is told by the branch that
    # explains it best, where one does. Draft 2020-12 reaches subschemas through `$dynamicRef` once
    # per vocabulary, so the same fault can come several times: keep each once, in the order found.
    told = (best_match([error]) for error in checker.iter_errors(schema))
    return list(dict.fromkeys(f"{_pointer(error.absolute_path)}: {error.message}" for error in told))


def _metaschema_checker(schema: dict | bool) -> Validator:
    declared = schema.get("$schema") if isinstance(schema, dict) else None
    draft = Draft202012Validator
    if isinstance(declared, str):
        draft = validator_for({"$schema": declared}, default=Draft202012Validator)
    return draft(draft.META_SCHEMA, format_checker=_FORMATS)


def _pointer(path: Iterable[object]) -> str:
    return "".join(f"/{str(key).replace('~', '~0').replace('/', '~1')}" for key in path) or "/"
