"""The command line's commands seen from HTTP, all read off the one argparse tree: which are writes, the
JSON body each takes (one field per option, named by its `dest`), the argv a body or a query stands for,
and where each read command is served (READ_ROUTES, used by the server's routes and by the command
line's client alike)."""
from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, create_model

from domain.errors import UsageError

# Each read command and the path serving it; path parameters are the command's positional arguments.
# The command's other options are the query string (GET) or the JSON body (POST).
READ_ROUTES: dict[str, tuple[str, str]] = {
    "tool list": ("GET", "/v1/tools"),
    "tool show": ("GET", "/v1/tools/{id}"),
    "resolve": ("GET", "/v1/resolve/{id}"),
    "effective": ("GET", "/v1/subjects/{subject}/effective"),
    "explain": ("GET", "/v1/subjects/{subject}/explain/{tool}"),
    "audit verify": ("GET", "/v1/audit/verify"),
    "audit fingerprint": ("GET", "/v1/audit/fingerprint"),
    "audit alias": ("GET", "/v1/audit/aliases/{alias}"),
    "audit replay": ("GET", "/v1/audit/replay"),
    "audit report": ("GET", "/v1/audit/report"),
    "sql": ("POST", "/v1/sql"),
    "route check": ("GET", "/v1/subjects/{subject}/route-check"),
    "route node": ("GET", "/v1/route/node/{tool}"),
    "proposal list": ("GET", "/v1/proposals"),
    "proposal show": ("GET", "/v1/proposals/{proposal_id}"),
    "audit what-if": ("GET", "/v1/audit/what-if"),
    "who-can": ("GET", "/v1/tools/{tool}/who-can"),
    "mcp server list": ("GET", "/v1/mcp/servers"),
    "mcp server show": ("GET", "/v1/mcp/servers/{name}"),
}
# Options no HTTP request gives: where the answer goes and which home (the server's).
_NOT_OVER_HTTP = {"help", "json", "home"}
# Options naming a file the command reads: over HTTP the file's JSON content is given instead.
FILE_OPTIONS = {"schema", "policy", "manifest", "evidence"}


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
    from infra.cli import build_parser
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


def body_model(command: str, leave_out: frozenset[str] = frozenset()) -> type[BaseModel]:
    """The JSON body of `command` over HTTP: its options by dest, typed as the command line parses them
    (read it with `model_dump(by_alias=True)`)."""
    fields: dict[str, Any] = {}
    for option in options_of(command):
        if option.dest in leave_out:
            continue
        kind: Any = Literal[option.choices] if option.choices else option.kind  # type: ignore[valid-type]
        if option.dest in FILE_OPTIONS:
            kind = dict[str, Any] | list[Any] | str
        # A dest that is also a BaseModel attribute (`schema`) gets another Python name; JSON keeps the dest.
        name = option.dest + "_" if hasattr(BaseModel, option.dest) else option.dest
        if option.boolean:
            fields[name] = (bool, Field(False, alias=option.dest, description=option.help))
            continue
        if option.multiple:
            kind = list[kind]
        described = Field(... if option.required else None, alias=option.dest, description=option.help)
        fields[name] = (kind if option.required else Optional[kind], described)
    name = "".join(word.capitalize() for word in command.replace("-", " ").split()) + "Body"
    return create_model(name, __config__=ConfigDict(extra="forbid"), **fields)
