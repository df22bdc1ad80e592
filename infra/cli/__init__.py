"""The `toolcat` command line (CONTRACT.md): one module per command group registers its commands;
`run` answers a command with its `Reply`, `main` prints it and turns errors into exit codes.

The command line answers at once: `main` builds only the command tree of the command it is given (the
other top-level commands are listed by name and help line, from infra/cli/index.py), and registering
commands imports no store, read model, HTTP stack or Kafka client (command modules import those inside
their handlers). So `toolcat --help` costs Python's start and argparse, and a command loads only what it
runs. tests/e2e/test_cli_imports.py holds that."""
from __future__ import annotations

import argparse
import functools
import importlib
import sys
import threading
from typing import TYPE_CHECKING, Any

from infra.cli.index import TOP_LEVEL
from infra.cli.registry import ArgumentsError, Commands, Parser, arguments_of

if TYPE_CHECKING:
    from domain.commands import CatalogCommand
    from infra.context import Backend
    from infra.reply import Reply
    from infra.settings import Settings

# The command modules (infra/cli/NAME.py), in the order `toolcat --help` lists their commands.
COMMAND_MODULES: tuple[str, ...] = ("catalog", "tools", "aliases", "subjects", "grants", "effective", "sql",
                                    "export", "audit", "pipelines", "serve", "dev", "routing", "proposals",
                                    "what_if", "who_can", "workload", "schemas", "mcp")
# The root's options that take a value, with the prefixes argparse takes for them ("--ho" is "--home").
_ROOT_VALUE_OPTIONS = ("--ho", "--hom", "--home")


def build_parser(argv: list[str] | None = None) -> Parser:
    """The command tree: whole, or enough to parse `argv`: the modules of the top-level command it names
    (none for `toolcat --help`), the other top-level commands listed by name and help line only."""
    root = Parser(prog="toolcat", description="An event-sourced catalog of the tools AI agents may call.")
    root.add_argument("--home", help="catalog home holding events.sqlite and catalog.duckdb "
                                     "(default TOOLCAT_HOME, else ./.toolcat)")
    root.add_argument("--json", action="store_true", help="answer with exactly one JSON document")
    commands = Commands(root)
    wanted = COMMAND_MODULES if argv is None else TOP_LEVEL.get(_top_level_word(argv) or "", ("", ()))[1]
    for name in COMMAND_MODULES:
        if name in wanted:
            importlib.import_module(f"infra.cli.{name}").register(commands)
    for word, (help_text, _) in TOP_LEVEL.items():
        if word not in commands.helps:
            commands.listed(word, help_text)
    return root


def _top_level_word(argv: list[str]) -> str | None:
    """The command `argv` names, as the root parser reads it: its first word that is neither an option
    nor the value of --home."""
    words = iter(argv)
    for word in words:
        if word == "--":
            return next(words, None)
        if not word.startswith("-") or word == "-":
            return word
        if word in _ROOT_VALUE_OPTIONS:
            next(words, None)
    return None


def settings_for(args: argparse.Namespace, base: Settings | None = None) -> Settings:
    from infra.settings import load_settings
    settings = base or load_settings()
    home = getattr(args, "home", None)
    return settings.model_copy(update={"home": type(settings.home)(home)}) if home else settings


def execute(args: argparse.Namespace, settings: Settings | None, backend: Backend | None = None) -> Reply:
    """Answer a parsed command with its reply (on `backend`'s catalog and read model when given)."""
    from infra.context import Context
    ctx = Context(settings_for(args, settings), args, backend)
    try:
        # While a server owns this home's read model, reads are its to answer (but those that run here:
        # `export` reads the snapshot the server publishes, `audit report` writes its file here).
        server = ctx.server if args.kind == "read" and not getattr(args, "runs_here", False) else None
        if server is None:
            return args.handler(ctx)
        from infra.cli.served import command_of, request_values
        command = command_of(args)
        return server.read(command, request_values(command, args))
    finally:
        ctx.close()


_PARSING = threading.Lock()


@functools.cache
def _shared_parser() -> argparse.ArgumentParser:
    return build_parser()


def parse_command(argv: list[str]) -> argparse.Namespace:
    """argv parsed by one parser built once per process (parsing is not documented as thread-safe: one at
    a time); `ArgumentsError` when it does not parse or names no command."""
    with _PARSING:
        args = _shared_parser().parse_args(argv)
    if getattr(args, "handler", None) is None:
        raise ArgumentsError("a command is required", _shared_parser().format_usage())
    return args


def planned_command(argv: list[str], inputs: dict[str, Any]) -> CatalogCommand:
    """The write command a proposal holds: its command line (how proposals are stored), with the content
    of its file options (`inputs`, option → JSON) given as the fields they fill; no file is written."""
    from domain.commands import WRITES, CatalogCommand
    from infra.cli.served import command_of
    from infra.writing import command_from
    # Each file option is parsed with a stand-in (a required one must be there), then filled with its content.
    args = parse_command([*argv, *(part for option in inputs for part in (option, "(content)"))])
    kind = WRITES[command_of(args)]
    read = {option.lstrip("-").replace("-", "_"): content for option, content in inputs.items()}
    command = command_from(kind, arguments_of(kind, args) | read)
    assert isinstance(command, CatalogCommand), command  # a plan holds the catalog's own commands only
    return command


def run(argv: list[str], settings: Settings | None = None, backend: Backend | None = None) -> Reply:
    """Answer one command with its reply (the --json document and the readable form) without printing it;
    long-running commands still report progress as they go. Errors are raised: a `ToolcatError`
    (`ArgumentsError` when the arguments do not parse). `backend` lends a server's catalog and read model."""
    return execute(parse_command(argv), settings, backend)


def main(argv: list[str] | None = None, settings: Settings | None = None) -> int:
    """Run one command and print its answer; `settings` replaces the environment's (tests and the demo run
    commands in-process)."""
    argv = sys.argv[1:] if argv is None else argv
    as_json = "--json" in argv
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except ArgumentsError as error:
        from infra.cli import output
        if not as_json:
            sys.stderr.write(error.usage)
        output.print_error(error, as_json)
        return error.exit_code
    if getattr(args, "handler", None) is None:
        parser.print_help(sys.stderr)
        return 2
    return _answer(args, settings)


def _answer(args: argparse.Namespace, settings: Settings | None) -> int:
    import traceback

    from domain.errors import ToolcatError, UsageError
    from infra.cli import output
    from infra.settings import scrub
    from infra.wiring import infrastructure_error
    as_json, kind = bool(getattr(args, "json", False)), args.kind
    try:
        resolved = settings_for(args, settings)
    except UsageError as error:
        output.print_error(error, as_json, kind)
        return error.exit_code
    from infra.private_home import keep_private
    keep_private(resolved.home)  # before any file is made: the home's files are its owner's alone
    secrets = resolved.secrets()  # a driver's message may repeat the store URL or a password: never shown
    try:
        reply = execute(args, resolved)
    except ToolcatError as error:
        output.print_error(error, as_json, kind, secrets)
        return error.exit_code
    except Exception as error:  # the last line of defence: report, never a silent success
        known = infrastructure_error(error)
        if known is not None:
            output.print_error(known, as_json, kind, secrets)
            return known.exit_code
        sys.stderr.write(scrub(traceback.format_exc(), secrets))
        output.print_error(ToolcatError(f"unexpected failure (a bug): {error!r}"), as_json, kind, secrets)
        return 1
    output.show(reply, as_json)
    return reply.exit_code


def entrypoint() -> None:
    sys.exit(main())
