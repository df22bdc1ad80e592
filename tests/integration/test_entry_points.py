"""The two entry points share the application's commands and never each other (DESIGN.md: "infra/cli and
infra/http never import each other: both call the same commands"), and a write command is what both
entry points spell it as: a command line's options are the command's fields, which are the JSON body of
`POST /v1/<noun>/<verb>`.

Reads the source files and the command line's parser; starts nothing."""
from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest

from domain.commands import WRITES, CatalogCommand
from domain.commands.aliases import Milestone, RecordableStep
from domain.commands.base import Command
from domain.window import MILESTONES, RECORDABLE_STEPS
from infra.cli.registry import Parser

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(folder: Path) -> dict[str, set[str]]:
    """Every module each file under `folder` imports, at the top or inside a function, by full name."""
    found: dict[str, set[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        names = found.setdefault(str(path.relative_to(folder.parents[1])), set())
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def crossing(folder: Path, other: str) -> list[str]:
    return sorted(f"{path} imports {name}" for path, names in imported_modules(folder).items()
                  for name in names if name == other or name.startswith(other + "."))


@pytest.mark.parametrize(("folder", "other"), [("infra/http", "infra.cli"), ("infra/cli", "infra.http")])
def test_given_the_entry_points_then_neither_imports_the_other(folder: str, other: str) -> None:
    assert crossing(ROOT / folder, other) == []


def test_given_an_import_across_hidden_in_a_function_then_the_scan_sees_it(tmp_path: Path) -> None:
    # The way the 34 crossings were made: function-local imports, the package's and a module's.
    folder = tmp_path / "infra" / "http"
    folder.mkdir(parents=True)
    (folder / "later.py").write_text("def later():\n    from infra.cli import run\n    import infra.cli.output\n")
    (folder / "package.py").write_text("def later():\n    from infra import cli\n")
    (folder / "fine.py").write_text("from infra.reply import Reply\nfrom infra import clipboard\n")
    assert crossing(folder, "infra.cli") == [
        "infra/http/later.py imports infra.cli", "infra/http/later.py imports infra.cli.output",
        "infra/http/later.py imports infra.cli.run", "infra/http/package.py imports infra.cli"]


# -- the command line's options are the commands' fields -----------------------------------------------
_NOT_FIELDS = {"help", "json", "home", "actor", "reason", "idempotency_key"}


@functools.cache
def write_parsers() -> dict[str, Parser]:
    from infra.cli import build_parser
    return {path: parser for path, parser in build_parser().commands.items()
            if parser.get_default("kind") == "write"}


def test_given_the_command_line_then_every_write_it_takes_is_a_command_and_no_other() -> None:
    assert sorted(write_parsers()) == sorted(WRITES)


@pytest.mark.parametrize("name", sorted(WRITES))
def test_given_a_write_then_its_options_are_the_commands_fields_with_the_same_choices(name: str) -> None:
    kind = WRITES[name]
    fields = {field.alias or key: field for key, field in kind.model_fields.items()}
    options = {a.dest: a for a in write_parsers()[name].options if a.dest not in _NOT_FIELDS}
    assert sorted(options) == sorted(fields)
    for dest, option in options.items():
        field = fields[dest]
        required = option.required if option.option_strings else option.nargs not in ("*", "?")
        assert field.is_required() == bool(required), dest
        if option.choices:
            assert set(option.choices) == set(_literal_values(field.annotation)), dest


def _literal_values(annotation: Any) -> tuple[Any, ...]:
    if get_origin(annotation) is Literal:
        return get_args(annotation)
    return tuple(value for arg in get_args(annotation) for value in _literal_values(arg))


def test_given_the_alias_commands_then_their_choices_are_the_windows() -> None:
    assert get_args(Milestone) == MILESTONES and get_args(RecordableStep) == RECORDABLE_STEPS


def test_given_every_write_then_it_is_carried_out_by_the_catalog_or_by_the_one_dispatch() -> None:
    from infra.writing import _WITH_READ_MODEL
    others = [kind for kind in WRITES.values() if not issubclass(kind, CatalogCommand)]
    assert sorted(k.name for k in others) == sorted(k.name for k in _WITH_READ_MODEL)
    assert all(issubclass(kind, Command) for kind in WRITES.values())
