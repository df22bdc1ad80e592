"""The `toolcat` command line (CONTRACT.md): argument parsing, dispatch, exit codes."""
from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

from domain.errors import ToolcatError, Unavailable, UsageError
from domain.values import GROUPS, RISKS, SOURCES, TIERS, VISIBILITIES
from domain.window import MILESTONES
from infra import commands, pipelines, reads, subject_commands as subjects
from infra.context import Context
from infra.render import print_error
from infra.settings import Settings


class Parser(argparse.ArgumentParser):
    """Usage errors exit 2, as a JSON error document when --json was asked for."""

    def error(self, message: str) -> NoReturn:
        if "--json" not in sys.argv[1:]:
            self.print_usage(sys.stderr)
        print_error(UsageError(message), "--json" in sys.argv[1:])
        raise SystemExit(2)


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="answer with exactly one JSON document on stdout")
    common.add_argument("--home", default=argparse.SUPPRESS, help="catalog home (default ./.toolcat)")
    return common


def _write_options() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--actor", help="who makes the change (default TOOLCAT_ACTOR, else the OS user)")
    options.add_argument("--reason", help="why the change is made; stored with every event")
    options.add_argument("--idempotency-key", help="a retry with the same key writes nothing and answers "
                                                   "as the first run did")
    return options


def _read_options() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--min-position", type=int, help="wait until the read model reached this position")
    options.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for --min-position")
    return options


class Commands:
    def __init__(self, root: argparse.ArgumentParser) -> None:
        self.common, self.writes, self.reads = _common(), _write_options(), _read_options()
        self.groups: dict[str, Any] = {"": root.add_subparsers(dest="command", metavar="COMMAND",
                                                               parser_class=Parser)}

    def group(self, name: str, help_text: str) -> None:
        parser = self.groups[""].add_parser(name, help=help_text)
        self.groups[name] = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND", required=True,
                                                  parser_class=Parser)

    def add(self, path: str, handler: Callable[[Context], int], help_text: str, kind: str) -> argparse.ArgumentParser:
        group, _, name = path.rpartition(" ")
        parents = [self.common] + ([self.writes] if kind == "write" else [self.reads] if kind == "read" else [])
        parser = self.groups[group].add_parser(name, help=help_text, parents=parents,
                                               description=help_text)
        parser.set_defaults(handler=handler)
        return parser


def build_parser() -> argparse.ArgumentParser:
    root = Parser(prog="toolcat", description="An event-sourced catalog of the tools AI agents may call.")
    root.add_argument("--home", help="catalog home holding events.sqlite and catalog.duckdb "
                                     "(default TOOLCAT_HOME, else ./.toolcat)")
    root.add_argument("--json", action="store_true", help="answer with exactly one JSON document")
    c = Commands(root)
    p = c.add("init", commands.cmd_init, "record the catalog's naming policy", "write")
    p.add_argument("--policy", default="tyrum", help="tyrum, spring-voyage, verb-noun, or a JSON policy file")

    c.group("release", "publish releases (the clock of deprecation windows)")
    c.add("release publish", commands.cmd_release_publish, "publish a release version", "write") \
        .add_argument("version", metavar="VERSION")

    c.group("tool", "register, rename, show and list tools")
    p = c.add("tool register", commands.cmd_tool_register, "register a tool under its canonical ID", "write")
    p.add_argument("id", metavar="ID")
    p.add_argument("--source", required=True, choices=SOURCES)
    p.add_argument("--group", required=True, choices=GROUPS)
    p.add_argument("--tier", required=True, choices=TIERS)
    p.add_argument("--visibility", required=True, choices=VISIBILITIES)
    p.add_argument("--family")
    p.add_argument("--plugin")
    p.add_argument("--backing-server")
    p.add_argument("--description")
    p.add_argument("--class", dest="classes", action="append", metavar="LABEL")
    p.add_argument("--risk", choices=RISKS)
    p.add_argument("--schema", metavar="FILE.json")
    p.add_argument("--requires-state", action="store_true")
    p = c.add("tool rename", commands.cmd_tool_rename, "make NEW canonical; OLD becomes a deprecated alias",
              "write")
    p.add_argument("old", metavar="OLD")
    p.add_argument("new", metavar="NEW")
    c.add("tool show", reads.cmd_tool_show, "show a tool's descriptor", "read").add_argument("id", metavar="ID")
    p = c.add("tool list", reads.cmd_tool_list, "list tools, a page at a time", "read")
    p.add_argument("--group", choices=GROUPS)
    p.add_argument("--family")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--cursor")

    c.group("alias", "aliases, deprecation windows and the removal path")
    p = c.add("alias add", commands.cmd_alias_add, "add an alias (or a shim) for a canonical ID", "write")
    p.add_argument("canonical", metavar="CANONICAL")
    p.add_argument("alias", metavar="ALIAS")
    p.add_argument("--shim", action="store_true", help="a legacy input: resolvable, never emitted")
    c.add("alias deprecate", commands.cmd_alias_deprecate, "schedule an alias for removal", "write") \
        .add_argument("alias", metavar="ALIAS")
    p = c.add("alias milestone", commands.cmd_alias_milestone, "record a deprecation-window milestone", "write")
    p.add_argument("alias", metavar="ALIAS")
    p.add_argument("milestone", choices=MILESTONES)
    p.add_argument("--release", required=True, metavar="VERSION")
    p.add_argument("--evidence")
    p = c.add("alias step", commands.cmd_alias_step, "record removal step 1, 2 or 5", "write")
    p.add_argument("alias", metavar="ALIAS")
    p.add_argument("step", type=int, choices=(1, 2, 5))
    p.add_argument("--evidence", required=True)
    p = c.add("alias retire", commands.cmd_alias_retire, "retire a deprecated alias (removal steps 3 and 4)",
              "write")
    p.add_argument("alias", metavar="ALIAS")
    p.add_argument("--release", required=True, metavar="VERSION")

    _subject_commands(c)
    c.add("resolve", reads.cmd_resolve, "resolve an ID or alias to its canonical ID", "read") \
        .add_argument("id", metavar="ID")
    c.group("audit", "check the history")
    c.add("audit verify", reads.cmd_audit_verify, "recompute the hash chain and compare with the read model",
          "read")
    c.add("audit alias", reads.cmd_audit_alias, "an alias's window, milestones and removal steps", "read") \
        .add_argument("alias", metavar="ALIAS")
    c.add("audit seal", reads.cmd_audit_seal, "verify the chain and record its head in the store", "write")
    c.add("audit replay", reads.cmd_audit_replay, "replay the store into a scratch read model and compare",
          "read").add_argument("--until", type=int, metavar="POSITION")
    c.add("audit fingerprint", reads.cmd_audit_fingerprint, "the read model's fingerprint (to compare copies)",
          "read").add_argument("--at", type=int, metavar="POSITION")
    p = c.add("audit report", reads.cmd_audit_report, "the deprecation audit report as JSON or HTML", "read")
    p.add_argument("--alias", metavar="ALIAS")
    p.add_argument("--format", choices=("json", "html"), default="html")
    p.add_argument("-o", "--output", required=True, metavar="FILE")
    p = c.add("project", pipelines.cmd_project, "bring the DuckDB read model up to date", "pipeline")
    p.add_argument("--follow", action="store_true", help="keep projecting new events until stopped")
    p.add_argument("--from", dest="source", choices=("store", "kafka"), default="store")
    p.add_argument("--idle-seconds", type=float, default=3.0,
                   help="with --from kafka and no --follow: stop after this long without messages")
    p = c.add("relay", pipelines.cmd_relay, "publish stored events to Kafka toolcat.events", "pipeline")
    p.add_argument("--follow", action="store_true", help="keep relaying new events until stopped")
    p.add_argument("--from-position", type=int, metavar="N", help="relay again from position N")
    p = c.add("watch", pipelines.cmd_watch, "print a subject's effective-set changes from Kafka", "pipeline")
    p.add_argument("subject", metavar="SUBJECT")
    p.add_argument("--timeout", type=float, help="stop after this many seconds without messages")
    c.add("dev-broker", pipelines.cmd_dev_broker, "run a local Kafka-compatible broker", "pipeline") \
        .add_argument("--port", type=int, default=9092)
    c.add("rebuild", reads.cmd_rebuild, "rebuild the read model from the store and swap it in", "pipeline")
    p = c.add("bench", pipelines.cmd_bench, "measure the performance budget (JSON figures)", "pipeline")
    p.add_argument("--events", type=int, default=20000)
    p.add_argument("--only", metavar="NAME")
    from infra.demo import cmd_demo
    c.add("demo", cmd_demo, "build the example catalogs and walk through them", "pipeline") \
        .add_argument("--kafka", action="store_true", help="start the dev broker and stream through Kafka too")
    return root


def _moment_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--at", type=int, metavar="POSITION", help="as known at this event position")
    parser.add_argument("--as-of", metavar="ISO8601", help="as known at this time")
    parser.add_argument("--effective-at", metavar="ISO8601",
                        help="the grants and bindings in effect at this time (with --at/--as-of: as known then)")


def _effective_at_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--effective-at", metavar="ISO8601",
                        help="when the change takes effect, if not when it is recorded")


def _subject_commands(c: Commands) -> None:
    c.group("unit", "units (nested groups of agents)")
    p = c.add("unit create", subjects.cmd_unit_create, "create a unit", "write")
    p.add_argument("unit", metavar="UNIT")
    p.add_argument("--parent", metavar="UNIT")
    c.group("agent", "agents, their state mode and allowlist")
    p = c.add("agent create", subjects.cmd_agent_create, "create an agent in a unit", "write")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("--unit", required=True)
    p.add_argument("--state-mode", choices=("stateful", "stateless"), default="stateful")
    p = c.add("agent allowlist", subjects.cmd_agent_allowlist, "set (or --clear) an agent's allowlist", "write")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("patterns", metavar="PATTERN", nargs="*")
    p.add_argument("--clear", action="store_true")
    c.group("connector", "connectors: a tool namespace bound to units")
    p = c.add("connector register", subjects.cmd_connector_register, "register a connector and its tools", "write")
    p.add_argument("slug", metavar="SLUG")
    p.add_argument("--namespace", metavar="NS", help="tool namespace (default: the slug)")
    p.add_argument("--tool", dest="tools", action="append", required=True, metavar="ID")
    for verb, handler in (("bind", subjects.cmd_connector_bind), ("unbind", subjects.cmd_connector_unbind)):
        p = c.add(f"connector {verb}", handler, f"{verb} a connector to a unit", "write")
        p.add_argument("slug", metavar="SLUG")
        p.add_argument("--unit", required=True)
        _effective_at_option(p)
    c.group("image", "tools an agent's image declares")
    p = c.add("image declare", subjects.cmd_image_declare, "declare (or rotate) an agent's image tools", "write")
    p.add_argument("agent", metavar="AGENT")
    p.add_argument("--image", required=True, metavar="REF")
    p.add_argument("--tool", dest="tools", action="append", required=True, metavar="ID")
    c.group("grant", "explicit grants to a unit or agent")
    for verb, handler in (("add", subjects.cmd_grant_add), ("revoke", subjects.cmd_grant_revoke)):
        p = c.add(f"grant {verb}", handler, f"{verb} an explicit grant of a tool or ns.*", "write")
        p.add_argument("subject", metavar="SUBJECT", help="unit:NAME or agent:NAME")
        p.add_argument("target", metavar="TARGET", help="a tool ID or ns.*")
        _effective_at_option(p)
    p = c.add("effective", subjects.cmd_effective, "a subject's effective tool set", "read")
    p.add_argument("subject", metavar="SUBJECT")
    _moment_options(p)
    p = c.add("explain", subjects.cmd_explain, "why a subject sees (or not) a tool", "read")
    p.add_argument("subject", metavar="SUBJECT")
    p.add_argument("tool", metavar="TOOL")
    _moment_options(p)
    p = c.add("sql", subjects.cmd_sql, "run a read-only SQL query on the read model", "read")
    p.add_argument("query", metavar="QUERY")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")


def settings_for(args: argparse.Namespace, base: Settings | None = None) -> Settings:
    settings = base or Settings()
    home = getattr(args, "home", None)
    return settings.model_copy(update={"home": type(settings.home)(home)}) if home else settings


def _infrastructure_error(error: Exception) -> ToolcatError | None:
    """Driver errors that mean a database could not be reached or used: exit 6, not a bug."""
    from eventsourcing.persistence import InterfaceError, OperationalError
    if isinstance(error, (OperationalError, InterfaceError)):
        return Unavailable(f"the event store is unavailable: {error}")
    return None


def main(argv: list[str] | None = None, settings: Settings | None = None) -> int:
    """Run one command; `settings` replaces the environment's (the demo runs commands in-process)."""
    args = build_parser().parse_args(argv)
    if getattr(args, "handler", None) is None:
        build_parser().print_help(sys.stderr)
        return 2
    ctx = Context(settings_for(args, settings), args)
    try:
        return args.handler(ctx)
    except ToolcatError as error:
        print_error(error, ctx.as_json)
        return error.exit_code
    except Exception as error:  # the last line of defence: report, never a silent success
        known = _infrastructure_error(error)
        if known is not None:
            print_error(known, ctx.as_json)
            return known.exit_code
        traceback.print_exc(file=sys.stderr)
        print_error(ToolcatError(f"unexpected failure (a bug): {error!r}"), ctx.as_json)
        return 1
    finally:
        ctx.close()


def entrypoint() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entrypoint()
