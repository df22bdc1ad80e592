"""`toolcat init` and `toolcat release …`: the catalog's naming policy and its release clock."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from domain.errors import InvalidPolicy
from infra.cli.output import Reply
from infra.cli.registry import Commands, read_text_file, write

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from domain.naming import NamingPolicy
    from infra.context import Context


def register(commands: Commands) -> None:
    p = commands.add("init", cmd_init, "record the catalog's naming policy", "write")
    p.add_argument("--policy", default="tyrum", help="tyrum, spring-voyage, verb-noun, or a JSON policy file")
    commands.group("release", "publish releases (the clock of deprecation windows)")
    commands.add("release publish", cmd_release_publish, "publish a release version", "write") \
        .add_argument("version", metavar="VERSION")
    p = commands.add("release plan", cmd_release_plan, "record a future release's planned date (feeds Sunset)",
                     "write")
    p.add_argument("version", metavar="VERSION")
    p.add_argument("--date", required=True, metavar="YYYY-MM-DD",
                   help="the release's planned date (feeds the Sunset header of its deprecations)")


def load_policy(name: str) -> NamingPolicy:
    """A `--policy` value: a preset's name, or a JSON policy file."""
    from domain.naming import PRESETS, policy_from_json, preset
    return preset(name) if name in PRESETS else policy_from_json(read_text_file(name, "the policy file"))


def policy_document(name: str) -> str | dict[str, Any]:
    """A `--policy` value as `init` takes it: a preset's name, or the policy a JSON file holds."""
    from domain.naming import PRESETS
    if name in PRESETS:
        return name
    text = read_text_file(name, "the policy file")
    try:
        document = json.loads(text)
    except ValueError as error:
        raise InvalidPolicy(f"invalid naming policy: {name} is not JSON: {error}", reason=str(error)) from None
    if not isinstance(document, dict):
        raise InvalidPolicy(f"invalid naming policy: {name} holds no JSON object", reason="not an object")
    return document


def cmd_init(ctx: Context) -> Reply:
    from domain.commands import catalog
    return write(ctx, catalog.Init, policy=policy_document(ctx.args.policy))


def cmd_release_publish(ctx: Context) -> Reply:
    from domain.commands import catalog
    return write(ctx, catalog.ReleasePublish)


def cmd_release_plan(ctx: Context) -> Reply:
    from domain.commands import catalog
    return write(ctx, catalog.ReleasePlan)
