"""The command line's parser, built whole or for one command (infra/cli/__init__.py `build_parser`): a
command's tree is the same either way, `toolcat --help` lists every command from the index without
loading a command module, and the words of a command never collide with an option's value."""
from __future__ import annotations

import pytest

from infra.cli import TOP_LEVEL, build_parser, parse_command, planned_command
from infra.cli.registry import Parser
from infra.cli.served import command_of
from infra.dev.cli_index import INDEX, index_source

WHOLE = build_parser()


def _paths(parser: Parser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path] if path else []
    for name, sub in parser.groups.items():
        found += _paths(sub, (*path, name))
    return found


def _parser_at(root: Parser, path: tuple[str, ...]) -> Parser:
    for name in path:
        root = root.groups[name]
    return root


def test_the_index_is_what_the_command_modules_register() -> None:
    # (when it fails: python -m infra.dev.cli_index, and commit infra/cli/index.py)
    assert INDEX.read_text() == index_source()


@pytest.mark.parametrize("path", _paths(WHOLE), ids=" ".join)
def test_a_command_built_alone_is_the_command_of_the_whole_tree(path: tuple[str, ...]) -> None:
    # given the parser built for a command line naming `path` (behind root options, as users type them)
    alone = build_parser(["--home", "h", "--json", *path, "--help"])
    # then that command (or group) helps, takes options and offers choices as in the whole tree
    assert _parser_at(alone, path).format_help() == _parser_at(WHOLE, path).format_help()


def test_help_lists_every_command_without_building_any() -> None:
    # given the parser for `toolcat --help`
    listed = build_parser(["--help"])
    # then it lists each top-level command with its line, as the whole tree does, and builds none of them
    assert listed.format_help() == WHOLE.format_help()
    assert listed.commands == {} and list(TOP_LEVEL) == list(WHOLE.groups)


def test_the_words_of_a_command_are_not_overwritten_by_its_options() -> None:
    # given `mcp server add` with --command, an option whose dest was once the parsed command's first word
    args = parse_command(["mcp", "server", "add", "shop", "--command", "npx", "--arg", "serve"])
    # then the command is still `mcp server add`, and --command is the server's program
    assert command_of(args) == "mcp server add" and args.command == "npx"
    # and a proposal holding that command line reads it back as that command
    planned = planned_command(["mcp", "server", "add", "shop", "--command", "npx"], {})
    assert (planned.name, planned.command) == ("mcp server add", "npx")
