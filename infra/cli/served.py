"""The read commands a server answers, run as the command line runs them: a request's values (by the
options' `dest`) become the command's arguments, read off the one argparse tree. The server is handed
`answer_read` when `toolcat serve` starts it (infra/serving.py), so infra/http never imports the command
line. (Writes are command objects, domain/commands, and never pass through here.)"""
from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass
from typing import Any

from domain.errors import UsageError
from infra.context import Backend
from infra.reply import Reply
from infra.settings import Settings

# Options no HTTP request gives: where the answer goes and which home (the server's).
_NOT_OVER_HTTP = {"help", "json", "home"}


@dataclass(frozen=True)
class Option:
    dest: str
    flag: str | None  # "--name"; None for a positional argument
    multiple: bool
    boolean: bool
    required: bool
    kind: type
    choices: tuple[Any, ...] | None
    help: str | None
    default: Any


def _option(action: argparse.Action) -> Option:
    flags = [s for s in action.option_strings if s.startswith("--")]
    multiple = isinstance(action, argparse._AppendAction) or action.nargs in ("*", "+")
    boolean = isinstance(action, argparse._StoreTrueAction)
    required = action.required if flags else action.nargs not in ("*", "?")
    return Option(action.dest, flags[0] if flags else None, multiple, boolean, bool(required),
                  action.type if action.type in (int, float) else str,
                  tuple(action.choices) if action.choices else None, action.help,
                  None if action.default is argparse.SUPPRESS else action.default)


@functools.cache
def _tree() -> dict[str, tuple[str, tuple[Option, ...]]]:
    """Every command ("tool register") with its kind and options."""
    from infra.cli import build_parser  # (the package imports this module only when a server asks)
    found: dict[str, tuple[str, tuple[Option, ...]]] = {}

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, [*words, name])
        kind = parser.get_default("kind")
        if kind is not None:
            found[" ".join(words)] = (kind, tuple(_option(a) for a in parser._actions
                                                  if a.dest not in _NOT_OVER_HTTP and a.dest != "==SUPPRESS=="))
    walk(build_parser(), [])
    return found


def commands_of(kind: str) -> list[str]:
    return [name for name, (found, _) in _tree().items() if found == kind]


def options_of(command: str) -> tuple[Option, ...]:
    return _tree()[command][1]


def argv_for(command: str, values: dict[str, Any]) -> list[str]:
    """The argv of `command` with these option values (by dest; None and False mean not given)."""
    options = {o.dest: o for o in options_of(command)}
    unknown = sorted(set(values) - set(options))
    if unknown:
        raise UsageError(f"'{command}' has no option {', '.join(unknown)}", unknown=unknown)
    argv, positionals = command.split(), []
    for option in options.values():
        value = values.get(option.dest)
        if value is None or value is False or value == []:
            continue
        items = [str(v) for v in value] if option.multiple and isinstance(value, list) else [str(value)]
        if option.flag is None:
            positionals += items
        elif option.boolean:
            argv.append(option.flag)
        else:
            argv += [f"{option.flag}={item}" for item in items]
    # After "--" a value that starts with "-" is still a value.
    return argv + (["--", *positionals] if positionals else [])


def answer_read(command: str, values: dict[str, Any], settings: Settings, backend: Backend) -> Reply:
    """The read `command` with these option values, run on a server's catalog and read model."""
    from infra.cli import run
    # --json: the command reports no progress and prints no notices (the reply still has its human form).
    return run(["--json", *argv_for(command, values)], settings, backend=backend)


def command_of(args: argparse.Namespace) -> str:
    """The command a parsed command line names ("route rule add")."""
    words = [getattr(args, level, None) for level in ("command", "subcommand", "subsubcommand")]
    return " ".join(word for word in words if word)


def request_values(command: str, args: argparse.Namespace) -> dict[str, Any]:
    """The options `command` was given, as a request to a server carries them (none left at its default)."""
    return {o.dest: getattr(args, o.dest, None) for o in options_of(command)
            if getattr(args, o.dest, None) not in (None, False, o.default)}
