"""The SQL files shipped in the package: `sql/*.sql` (queries, loaded by name) and `migrations/*.sql`.

Read through importlib.resources, so an installed package finds them as an editable checkout does
(pyproject.toml lists both folders as package data). A query may name `{{fragment}}`s: a keyword given
to `query`, a shared fact (schema.py, digest.py), or another file of `sql/`, included whole.
"""
from __future__ import annotations

import re
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

from projections.digest import ROW_MD5, SET_DIGEST
from projections.schema import AS_OF, EFFECTIVE_FIELDS, as_of_tables

_FRAGMENT = re.compile(r"\{\{(\w+)\}\}")
_SHARED = {"as_of": AS_OF, "as_of_tables": as_of_tables(), "effective_fields": ", ".join(EFFECTIVE_FIELDS),
           "row_md5": ROW_MD5, "set_digest": SET_DIGEST}


def _folder(name: str) -> Traversable:
    return resources.files("projections") / name


def sql_files(folder: str) -> list[tuple[str, str]]:
    """(file name, text) of every .sql file in a folder of the package, sorted by name."""
    return sorted((entry.name, entry.read_text()) for entry in _folder(folder).iterdir()
                  if entry.name.endswith(".sql"))


@cache
def query(name: str, **fragments: str) -> str:
    """The text of `sql/<name>.sql`, its fragments filled in."""
    path = _folder("sql") / f"{name}.sql"
    if not path.is_file():
        raise KeyError(f"no SQL file or fragment named {name!r}")

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key in fragments:
            return fragments[key]
        if key in _SHARED:
            return _SHARED[key]
        return f"\n{query(key, **fragments)}\n"  # on lines of its own: its comments end where it does

    return _FRAGMENT.sub(fill, path.read_text())
