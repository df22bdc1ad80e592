"""`toolcat tool classify`, `route …`, `node …` and `secret ref …`: tool classes and route rules (ADR-027),
nodes and secret references (ARCH-19)."""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from infra.cli.output import Reply, plain
from infra.cli.registry import Commands, command_words, write

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    p = commands.add("tool classify", cmd_tool_classify, "give a tool its ordered class labels", "write")
    p.add_argument("id", metavar="ID")
    p.add_argument("--class", dest="classes", action="append", required=True, metavar="LABEL",
                   help="a class label such as source:sensitive or sink:network (repeat, in order)")
    commands.group("route", "route rules over tool classes and names, route decisions, node selection")
    _route_commands(commands)
    commands.group("node", "nodes that serve capability-backed tools")
    _node_commands(commands)
    commands.group("secret", "secret references: which tools may receive a secret, never its value")
    commands.subgroup("secret ref", "secret references")
    p = commands.add("secret ref add", cmd_secret_ref_add, "record a secret reference and the tools that may "
                                                           "receive it (never a value)", "write")
    p.add_argument("ref", metavar="REF")
    p.add_argument("--allow-tool", dest="allow_tools", action="append", required=True, metavar="ID",
                   help="a tool that may receive the secret (repeatable)")
    _refuse_unknown_arguments_unrepeated(p)
    commands.subgroup("secret alias", "agent-scoped secret aliases")
    p = commands.add("secret alias add", cmd_secret_alias_add, "give a secret reference an alias in one agent's "
                     "scope, with an optional operator-safe display name", "write")
    p.add_argument("subject", metavar="agent:NAME")
    p.add_argument("alias", metavar="ALIAS")
    p.add_argument("ref", metavar="REF")
    p.add_argument("--display-name", metavar="TEXT", help="a label that may be shown to a model (never a value)")
    _refuse_unknown_arguments_unrepeated(p)
    p = commands.add("secret alias resolve", cmd_secret_alias_resolve, "check an agent's secret alias for a call "
                     "of TOOL: its reference and display name, or why it may not be used", "read")
    p.add_argument("subject", metavar="agent:NAME")
    p.add_argument("alias", metavar="ALIAS")
    p.add_argument("--tool", required=True, metavar="ID", help="the dedicated secret tool the alias is for")


def _route_commands(commands: Commands) -> None:
    commands.subgroup("route rule", "add or remove route rules")
    p = commands.add("route rule add", cmd_route_rule_add, "add a route rule", "write")
    p.add_argument("rule_id", metavar="RULE_ID")
    for flag, text in (("--deny-any-class", "deny a call to a tool with any of these classes"),
                       ("--deny-all-classes", "deny a call to a tool with all of these classes"),
                       ("--after-any-class", "only after an earlier call to a tool with any of these classes"),
                       ("--after-all-classes", "only after an earlier call to a tool with all of these classes")):
        p.add_argument(flag, action="extend", nargs="+", metavar="C", help=text)
    p.add_argument("--deny-tool", metavar="ID", help="deny calls to this tool, by any of its names")
    p.add_argument("--after-tool", metavar="ID", help="only after an earlier call to this tool")
    p.add_argument("--scope", metavar="unit:U|agent:A", help="only for this unit (and below) or agent")
    p = commands.add("route rule remove", cmd_route_rule_remove, "remove a route rule", "write")
    p.add_argument("rule_id", metavar="RULE_ID")
    p = commands.add("route check", cmd_route_check, "allow or deny a call, with the evidence", "read")
    p.add_argument("subject", metavar="SUBJECT")
    p.add_argument("--call", required=True, metavar="TOOL", help="the tool being called, by any name")
    p.add_argument("--after", action="append", default=[], metavar="TOOL", help="an earlier call (repeatable)")
    p.add_argument("--at", type=int, metavar="P", help="decide as the catalog stood at position P")
    p = commands.add("route node", cmd_route_node, "pick the node a node-backed tool's call goes to", "read")
    p.add_argument("tool", metavar="TOOL")
    p.add_argument("--node", metavar="N", help="the node asked for (it must be eligible)")
    p.add_argument("--lane", metavar="L", help="the lane whose attached node is preferred")
    p.add_argument("--secret-ref", metavar="REF", help="check the secret reference may be given to TOOL")


def _node_commands(commands: Commands) -> None:
    for verb, text in (("pair", "pair a node"), ("unpair", "unpair a node (it becomes unready)"),
                       ("ready", "mark a paired node ready"), ("unready", "mark a node not ready")):
        commands.add(f"node {verb}", cmd_node, text, "write").add_argument("node", metavar="NODE")
    p = commands.add("node capability", cmd_node_capability, "advertise or withdraw capabilities", "write")
    p.add_argument("node", metavar="NODE")
    p.add_argument("--advertise", action="extend", nargs="+", metavar="CAP", help="capabilities the node now offers")
    p.add_argument("--withdraw", action="extend", nargs="+", metavar="CAP", help="capabilities the node no longer offers")
    p = commands.add("node attach", cmd_node_attach, "attach a node to a lane", "write")
    p.add_argument("node", metavar="NODE")
    p.add_argument("--lane", required=True, metavar="L", help="the lane to attach the node to")
    p = commands.add("node deny", cmd_node_deny, "deny a node one tool", "write")
    p.add_argument("node", metavar="NODE")
    p.add_argument("--tool", required=True, metavar="ID", help="the tool this node may no longer serve")


def _refuse_unknown_arguments_unrepeated(parser: argparse.ArgumentParser) -> None:
    """Unknown arguments of a secret command are refused without being repeated: they may be a value."""
    parse = parser.parse_known_args

    def parse_known_args(args: Any = None, namespace: Any = None) -> tuple[argparse.Namespace, list[str]]:
        found, extras = parse(args, namespace)
        if extras:
            parser.error(f"{len(extras)} unknown argument(s) refused and not repeated: a secret reference "
                         "never takes a value")
        return found, extras
    parser.parse_known_args = parse_known_args  # type: ignore[method-assign]


def cmd_tool_classify(ctx: Context) -> Reply:
    from domain.commands import tools
    return write(ctx, tools.ToolClassify)


def cmd_route_rule_add(ctx: Context) -> Reply:
    from domain.commands import routing as routing_commands
    return write(ctx, routing_commands.RouteRuleAdd)


def cmd_route_rule_remove(ctx: Context) -> Reply:
    from domain.commands import routing as routing_commands
    return write(ctx, routing_commands.RouteRuleRemove)


def cmd_route_check(ctx: Context) -> Reply:
    from projections import routing
    a = ctx.args
    found = routing.route_check(ctx.read_model(), a.subject, a.call, a.after, a.at)
    line = f"{found['decision']}: {plain(a.subject)} calling {plain(a.call)} → {plain(found['matched_tool_name'])}"
    if found["decision"] == "deny":
        line += (f" [{plain(', '.join(found['matched_tool_classes']))}] by rule "
                 f"{plain(found['matched_route_rule_id'])} ({found['reason_code']})")
    return Reply(found, [line])


def cmd_route_node(ctx: Context) -> Reply:
    from projections import routing
    a = ctx.args
    found = routing.route_node(ctx.read_model(), a.tool, a.node, a.lane, a.secret_ref)
    return Reply(found, [f"{plain(found['tool_id'])} → node {plain(found['node'])} ({found['reason']})"])


def cmd_node(ctx: Context) -> Reply:
    from domain.commands import Command
    from domain.commands import routing as routing_commands
    node_commands: dict[str, type[Command]] = {
        "pair": routing_commands.NodePair, "unpair": routing_commands.NodeUnpair,
        "ready": routing_commands.NodeReady, "unready": routing_commands.NodeUnready,
    }
    return write(ctx, node_commands[command_words(ctx.args)[-1]])


def cmd_node_capability(ctx: Context) -> Reply:
    from domain.commands import routing as routing_commands
    return write(ctx, routing_commands.NodeCapability)


def cmd_node_attach(ctx: Context) -> Reply:
    from domain.commands import routing as routing_commands
    return write(ctx, routing_commands.NodeAttach)


def cmd_node_deny(ctx: Context) -> Reply:
    from domain.commands import routing as routing_commands
    return write(ctx, routing_commands.NodeDeny)


def cmd_secret_ref_add(ctx: Context) -> Reply:
    from domain.commands import routing as routing_commands
    return write(ctx, routing_commands.SecretRefAdd)


def cmd_secret_alias_add(ctx: Context) -> Reply:
    from domain.commands import routing as routing_commands
    return write(ctx, routing_commands.SecretAliasAdd)


def cmd_secret_alias_resolve(ctx: Context) -> Reply:
    from projections import routing
    a = ctx.args
    found = routing.resolve_secret_alias(ctx.read_model(), a.subject, a.alias, a.tool)
    label = f" ({plain(found['display_name'])})" if found["display_name"] else ""
    return Reply(found, [f"{plain(found['subject'])}: {plain(found['secret_alias'])} → secret reference "
                         f"{plain(found['secret_ref_id'])}{label}, for {plain(found['tool_id'])}"])
