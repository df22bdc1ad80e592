"""`toolcat init` and `toolcat release …`: the catalog's naming policy and its release clock."""
from __future__ import annotations

from typing import TYPE_CHECKING

from infra.cli.output import Reply
from infra.cli.registry import Commands, answer, read_text_file

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


def cmd_init(ctx: Context) -> Reply:
    return answer(ctx, ctx.catalog.init(load_policy(ctx.args.policy), ctx.meta()))


def cmd_release_publish(ctx: Context) -> Reply:
    return answer(ctx, ctx.catalog.publish_release(ctx.args.version, ctx.meta()))


def cmd_release_plan(ctx: Context) -> Reply:
    return answer(ctx, ctx.catalog.plan_release(ctx.args.version, ctx.args.date, ctx.meta()))
