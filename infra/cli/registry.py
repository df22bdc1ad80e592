"""Where command modules register their commands: the parser, the options every write or read shares,
and the errors of the command line itself (exit 2)."""
from __future__ import annotations

import argparse
import difflib
import re
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn

from domain.errors import UsageError
from infra.reply import Reply

if TYPE_CHECKING:  # registering commands imports no store, read model or domain model (`toolcat --help`)
    from domain.commands import Command
    from infra.context import Context

Handler = Callable[["Context"], Reply]


class ArgumentsError(UsageError):
    """The arguments do not parse; `usage` is the usage line of the (sub)command that refused them."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


class Parser(argparse.ArgumentParser):
    """Usage errors are raised, not printed: `main` prints them (exit 2), `run` lets them through. A value
    outside an option's (or the command's) choices is answered with the nearest choices. Each parser keeps
    the options it takes (`options`, its parents' included), so the command tree can be read without
    argparse's private attributes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.options: list[argparse.Action] = []
        self.groups: dict[str, Parser] = {}  # a group's commands by name (its subparsers' choices)
        super().__init__(*args, **kwargs)
        for parent in kwargs.get("parents", []):
            self.options += getattr(parent, "options", [])

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.options.append(action)
        return action

    def add_mutually_exclusive_group(self, **kwargs: Any) -> Any:
        return _Recorded(super().add_mutually_exclusive_group(**kwargs), self.options)

    def error(self, message: str) -> NoReturn:
        raise ArgumentsError(_with_nearest_choice(message), self.format_usage())


class _Recorded:
    """A group of a parser's options whose options the parser keeps too (anything else is the group's)."""

    def __init__(self, group: Any, options: list[argparse.Action]) -> None:
        self.group, self.options = group, options

    def __getattr__(self, name: str) -> Any:
        return getattr(self.group, name)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = self.group.add_argument(*args, **kwargs)
        self.options.append(action)
        return action


# argparse's message for a value outside the choices: "argument X: invalid choice: 'v' (choose from a, b)"
# (Python 3.12+ quotes the choices, 3.11 gives their repr).
_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<value>[^']*)' \(choose from (?P<choices>.*)\)$")


def _with_nearest_choice(message: str) -> str:
    """The message with the nearest choices suggested when it refuses a value outside them."""
    found = _INVALID_CHOICE.search(message)
    if found is None:
        return message
    names = [name.strip().strip("'\"") for name in found["choices"].split(",")]
    near = difflib.get_close_matches(found["value"], names, n=3, cutoff=0.6)
    suggestion = f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
    return (message[:found.start()] + f"invalid choice: {found['value']!r}{suggestion} "
            f"(choose from {', '.join(names)})")


def _common(json_help: str = "answer with exactly one JSON document on stdout") -> Parser:
    common = Parser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=json_help)
    common.add_argument("--home", default=argparse.SUPPRESS, help="catalog home (default ./.toolcat)")
    return common


def _write_options() -> argparse.ArgumentParser:
    options = Parser(add_help=False)
    options.add_argument("--actor", help="who makes the change (default TOOLCAT_ACTOR, else the OS user)")
    options.add_argument("--reason", help="why the change is made; stored with every event")
    options.add_argument("--idempotency-key", help="a retry with the same key writes nothing and answers "
                                                   "as the first run did")
    return options


def _read_options() -> argparse.ArgumentParser:
    options = Parser(add_help=False)
    options.add_argument("--min-position", type=int, help="wait until the read model reached this position")
    options.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for --min-position")
    return options


# Where parsing puts the words of the command ("mcp", "server", "add"), level by level. Each holds a space,
# which no option's dest made from its option string can: as "command" did, `mcp server add --command CMD`
# overwrote the name of the command it was given to.
WORD_DESTS = ("command word 1", "command word 2", "command word 3")


def command_words(args: argparse.Namespace) -> list[str]:
    """The words of the command a parsed command line names (["route", "rule", "add"])."""
    return [word for dest in WORD_DESTS if (word := getattr(args, dest, None))]


class Commands:
    """The command tree. `kind` is "write" (gets --actor, --reason, --idempotency-key), "read" (gets
    --min-position, --timeout) or "pipeline"."""

    def __init__(self, root: Parser) -> None:
        self.common, self.writes, self.reads = _common(), _write_options(), _read_options()
        self.groups: dict[str, Any] = {"": root.add_subparsers(dest=WORD_DESTS[0], metavar="COMMAND",
                                                               parser_class=Parser)}
        self.parents: dict[str, Parser] = {"": root}
        # Every command ("tool register") and its parser, in the order registered; the root keeps it.
        self.commands: dict[str, Parser] = {}
        root.commands = self.commands
        # The line `toolcat --help` shows for each top-level command or group, in the order registered.
        self.helps: dict[str, str] = {}

    def group(self, name: str, help_text: str) -> None:
        self.subgroup(name, help_text)

    def subgroup(self, path: str, help_text: str) -> Parser:
        """A group of commands under `path` ("mcp server")."""
        group, _, name = path.rpartition(" ")
        parser = self._parser(group, name, help_text)
        self.parents[path] = parser
        self.groups[path] = parser.add_subparsers(dest=WORD_DESTS[len(path.split())], metavar="SUBCOMMAND",
                                                  required=True, parser_class=Parser)
        return parser

    def listed(self, name: str, help_text: str) -> None:
        """A top-level command or group whose module is not loaded: named, with its help line, for
        `toolcat --help` and for the nearest choice to a typo (infra/cli/index.py)."""
        self.groups[""].add_parser(name, help=help_text)

    def add(self, path: str, handler: Handler, help_text: str, kind: str, json_help: str | None = None) -> Parser:
        """`json_help`: what --json prints, for a command whose answer is not one document (a stream)."""
        group, _, name = path.rpartition(" ")
        common = self.common if json_help is None else _common(json_help)
        parents = [common] + ([self.writes] if kind == "write" else [self.reads] if kind == "read" else [])
        parser = self._parser(group, name, help_text, parents=parents, description=help_text)
        parser.set_defaults(handler=handler, kind=kind)
        self.commands[path] = parser
        return parser

    def _parser(self, group: str, name: str, help_text: str, **options: Any) -> Parser:
        parser: Parser = self.groups[group].add_parser(name, help=help_text, **options)
        self.parents[group].groups[name] = parser
        if not group:
            self.helps[name] = help_text
        return parser


def write(ctx: Context, kind: type[Command], **read: Any) -> Reply:
    """Run the write command `kind` with the command line's arguments (its fields are their dests); `read`
    gives the fields the command line read from files (a file option's content)."""
    from infra.writing import command_from, perform  # the read model's stack only when a write runs
    return perform(command_from(kind, arguments_of(kind, ctx.args) | read), ctx)


def arguments_of(kind: type[Command], args: argparse.Namespace) -> dict[str, Any]:
    """The fields of `kind` the command line was given (by dest; unset ones are left to the command)."""
    names = [field.alias or name for name, field in kind.model_fields.items()]
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def effective_at_option(parser: argparse.ArgumentParser) -> None:
    """A write that may take effect at another time than when it is recorded."""
    parser.add_argument("--effective-at", metavar="ISO8601",
                        help="when the change takes effect, if not when it is recorded")


def read_text_file(path: str, what: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as error:
        raise UsageError(f"cannot read {what} {path}: {error.strerror or error}", path=path) from error
