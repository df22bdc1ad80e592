"""`toolcat alias …`: aliases and shims, deprecation windows and the removal path."""
from __future__ import annotations

from typing import TYPE_CHECKING

from domain.window import CONFIRMATION_STEPS, MILESTONES, RECORDABLE_STEPS, REMOVAL_STEPS
from infra.cli.output import Reply
from infra.cli.registry import Commands, write

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    commands.group("alias", "aliases, deprecation windows and the removal path")
    p = commands.add("alias add", cmd_alias_add, "add an alias (or a shim) for a canonical ID", "write")
    p.add_argument("canonical", metavar="CANONICAL")
    p.add_argument("alias", metavar="ALIAS")
    p.add_argument("--shim", action="store_true", help="a legacy input: resolvable, never emitted")
    commands.add("alias deprecate", cmd_alias_deprecate, "schedule an alias for removal", "write") \
        .add_argument("alias", metavar="ALIAS")
    p = commands.add("alias milestone", cmd_alias_milestone, "record a deprecation-window milestone", "write")
    p.add_argument("alias", metavar="ALIAS")
    p.add_argument("milestone", choices=MILESTONES)
    p.add_argument("--release", required=True, metavar="VERSION",
                   help="the release the milestone shipped in (published with 'release publish')")
    p.add_argument("--evidence", help="what shows the milestone was met (a link, a commit, a ticket)")
    p = commands.add("alias step", cmd_alias_step, "record removal step 1 or 2 (confirmations, before "
                     "retirement) or 5 (cleanup, after it); 'alias retire' performs steps 3 and 4", "write")
    p.add_argument("alias", metavar="ALIAS")
    p.add_argument("step", type=int, choices=RECORDABLE_STEPS, metavar="STEP",
                   help="; ".join(f"{n}: {name}" + ("" if n in RECORDABLE_STEPS else " (by 'alias retire')")
                                  for n, name in REMOVAL_STEPS.items()))
    p.add_argument("--evidence", required=True, help="what confirms the step (a PR, a release note, a migration)")
    commands.add("alias migrate", cmd_alias_migrate, "rewrite the catalog's stored references to an alias "
                 "(agent allowlists, route rules, secret references' allowed tools) to its canonical ID; removal "
                 "step 2 needs none left", "write").add_argument("alias", metavar="ALIAS")
    p = commands.add("alias retire", cmd_alias_retire, "retire a deprecated alias: performs removal steps "
                     f"3 ({REMOVAL_STEPS[3]}) and 4 ({REMOVAL_STEPS[4]}); needs the window closed and steps "
                     f"{' and '.join(map(str, CONFIRMATION_STEPS))} confirmed", "write")
    p.add_argument("alias", metavar="ALIAS")
    p.add_argument("--release", required=True, metavar="VERSION",
                   help="the release that retires the alias (removal steps 3 and 4)")


def cmd_alias_add(ctx: Context) -> Reply:
    from domain.commands import aliases
    return write(ctx, aliases.AliasAdd)


def cmd_alias_deprecate(ctx: Context) -> Reply:
    from domain.commands import aliases
    return write(ctx, aliases.AliasDeprecate)


def cmd_alias_milestone(ctx: Context) -> Reply:
    from domain.commands import aliases
    return write(ctx, aliases.AliasMilestone)


def cmd_alias_step(ctx: Context) -> Reply:
    from domain.commands import aliases
    return write(ctx, aliases.AliasStep)


def cmd_alias_migrate(ctx: Context) -> Reply:
    from domain.commands import aliases
    return write(ctx, aliases.AliasMigrate)


def cmd_alias_retire(ctx: Context) -> Reply:
    """A refusal says what to run next: the milestone or step to record, or the release to retire in."""
    from domain.commands import aliases
    from domain.errors import StepsIncomplete, WindowOpen
    from infra.hints import command
    from infra.writing import home_given
    alias, home = ctx.args.alias, home_given(ctx)
    try:
        return write(ctx, aliases.AliasRetire)
    except WindowOpen as error:
        if error.details.get("missing"):
            nexts = [command("alias", "milestone", alias, name, "--release", "VERSION", home=home)
                     for name in error.details["missing"]]
        else:
            earliest = error.details.get("earliest_removal") or error.details.get("earliest") or "VERSION"
            nexts = [command("alias", "retire", alias, "--release", str(earliest), home=home)]
        error.message += "; run " + " and ".join(f"'{n}'" for n in nexts)
        error.details["next"] = nexts
        raise
    except StepsIncomplete as error:
        nexts = [command("alias", "step", alias, str(step), "--evidence", "TEXT", home=home)
                 for step in error.details.get("missing", [])]
        error.message += "; run " + " and ".join(f"'{n}'" for n in nexts) + ", then retire again"
        error.details["next"] = nexts
        raise
