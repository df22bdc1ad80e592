"""`toolcat unit|agent|connector|image …`: the subjects that see tools, and what grants them tools
besides explicit grants (connector bindings, images)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from infra.cli.output import Reply
from infra.cli.registry import Commands, effective_at_option, write

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    commands.group("unit", "units (nested groups of agents)")
    p = commands.add("unit create", cmd_unit_create, "create a unit", "write")
    p.add_argument("unit", metavar="UNIT")
    p.add_argument("--parent", metavar="UNIT", help="the unit this one nests in (it inherits the parent's grants)")
    commands.group("agent", "agents, their state mode and allowlist")
    p = commands.add("agent create", cmd_agent_create, "create an agent in a unit", "write")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("--unit", required=True, help="the unit the agent belongs to (it inherits the unit's grants)")
    p.add_argument("--state-mode", choices=("stateful", "stateless"), default="stateful",
                   help="stateless agents see tools that require state as disabled (default stateful)")
    p = commands.add("agent allowlist", cmd_agent_allowlist, "set (or --clear) an agent's allowlist", "write")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("patterns", metavar="PATTERN", nargs="*")
    p.add_argument("--clear", action="store_true",
                   help="remove the allowlist: the agent may call every tool of its set")
    _connector_commands(commands)
    commands.group("image", "tools the image an agent or a unit runs declares")
    p = commands.add("image declare", cmd_image_declare, "declare (or rotate) the image a unit or an agent runs, "
                                                         "with its tools", "write")
    p.add_argument("subject", metavar="SUBJECT", help="unit:NAME, agent:NAME, or an agent's name; a unit's image "
                                                      "tools are its own (its agents do not inherit them)")
    p.add_argument("--image", required=True, metavar="REF", help="the image reference")
    p.add_argument("--tool", dest="tools", action="append", required=True, metavar="ID",
                   help="a tool the image declares (repeat for several)")


def _connector_commands(commands: Commands) -> None:
    commands.group("connector", "connectors: a tool namespace bound to units")
    p = commands.add("connector register", cmd_connector_register, "register a connector and its tools", "write")
    p.add_argument("slug", metavar="SLUG")
    p.add_argument("--namespace", metavar="NS", help="tool namespace (default: the slug)")
    p.add_argument("--tool", dest="tools", action="append", required=True, metavar="ID",
                   help="a tool the connector offers, in its namespace (repeat for several)")
    for verb, handler in (("bind", cmd_connector_bind), ("unbind", cmd_connector_unbind)):
        p = commands.add(f"connector {verb}", handler, f"{verb} a connector to a unit", "write")
        p.add_argument("slug", metavar="SLUG")
        p.add_argument("--unit", required=True, help="the unit to bind the connector to or unbind it from")
        effective_at_option(p)


def cmd_unit_create(ctx: Context) -> Reply:
    from domain.commands import subjects
    return write(ctx, subjects.UnitCreate)


def cmd_agent_create(ctx: Context) -> Reply:
    from domain.commands import subjects
    return write(ctx, subjects.AgentCreate)


def cmd_agent_allowlist(ctx: Context) -> Reply:
    from domain.commands import subjects
    return write(ctx, subjects.AgentAllowlist)


def cmd_connector_register(ctx: Context) -> Reply:
    from domain.commands import subjects
    return write(ctx, subjects.ConnectorRegister)


def cmd_connector_bind(ctx: Context) -> Reply:
    from domain.commands import subjects
    return write(ctx, subjects.ConnectorBind)


def cmd_connector_unbind(ctx: Context) -> Reply:
    from domain.commands import subjects
    return write(ctx, subjects.ConnectorUnbind)


def cmd_image_declare(ctx: Context) -> Reply:
    from domain.commands import subjects
    return write(ctx, subjects.ImageDeclare)
