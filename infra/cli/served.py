"""The read commands a server answers, run by the command line's own handlers: a request's values (by the
options' `dest`) become the command's parsed arguments over its defaults, read off the one argparse tree
(no argv). The server is handed `answer_read` when `toolcat serve` starts it (infra/serving.py), so
infra/http never imports the command line. (Writes are command objects, domain/commands, and never pass
through here.)"""
from __future__ import annotations

import argparse
import copy
import functools
from dataclasses import dataclass
from typing import Any

from domain.errors import UsageError
from infra.cli.registry import WORD_DESTS, command_words
from infra.context import Backend
from infra.reply import Reply
from infra.settings import Settings

# Options no HTTP request gives: where the answer goes and which home (the server's).
_NOT_OVER_HTTP = {"help", "json", "home"}


@dataclass(frozen=True)
class Option:
    dest: str
    default: Any  # what parsing leaves when the option is not given


def _option(action: argparse.Action) -> Option:
    return Option(action.dest, None if action.default is argparse.SUPPRESS else action.default)


@functools.cache
def _tree() -> dict[str, tuple[str, tuple[Option, ...], argparse.ArgumentParser]]:
    """Every command ("tool register") with its kind, options and parser."""
    from infra.cli import build_parser  # (the package imports this module only when a server asks)
    return {path: (parser.get_default("kind"),
                   tuple(_option(a) for a in parser.options if a.dest not in _NOT_OVER_HTTP), parser)
            for path, parser in build_parser().commands.items()}


def options_of(command: str) -> tuple[Option, ...]:
    return _tree()[command][1]


def answer_read(command: str, values: dict[str, Any], settings: Settings, backend: Backend) -> Reply:
    """The read `command` with these option values (by dest, typed and checked by the route that took
    them), run on a server's catalog and read model by the command's own handler. No argv: the values are
    the parsed arguments, over the command's defaults."""
    from infra.cli import execute
    return execute(arguments(command, values), settings, backend)


def arguments(command: str, values: dict[str, Any]) -> argparse.Namespace:
    """What parsing `command` with these option values gives (None: not given, the default holds)."""
    options = {o.dest: o for o in options_of(command)}
    unknown = sorted(set(values) - set(options))
    if unknown:
        raise UsageError(f"'{command}' has no option {', '.join(unknown)}", unknown=unknown)
    parser = _tree()[command][2]
    words = dict(zip(WORD_DESTS, command.split()))
    given = {dest: value for dest, value in values.items() if value is not None}
    # --json: the command reports no progress and prints no notices (the reply still has its human form).
    defaults = {o.dest: copy.copy(o.default) for o in options.values()}  # (a list default is the parser's own)
    return argparse.Namespace(**(defaults | given | words), json=True,
                              handler=parser.get_default("handler"), kind=parser.get_default("kind"))


def command_of(args: argparse.Namespace) -> str:
    """The command a parsed command line names ("route rule add")."""
    return " ".join(command_words(args))


def request_values(command: str, args: argparse.Namespace) -> dict[str, Any]:
    """The options `command` was given, as a request to a server carries them (none left at its default)."""
    return {o.dest: getattr(args, o.dest, None) for o in options_of(command)
            if getattr(args, o.dest, None) not in (None, False, o.default)}
