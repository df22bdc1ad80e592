"""`toolcat serve` (the read model over HTTP, infra/http/) and `toolcat token create|list|revoke` (who may
use it)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from infra.cli.output import Reply, notices
from infra.reply import Table
from infra.cli.registry import Commands

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    p = commands.add("serve", cmd_serve, "own the read model and serve it over HTTP until stopped", "pipeline")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (not loopback: tokens required)")
    p.add_argument("--port", type=int, default=8750, help="port to listen on (0: any free port, see serve.json)")
    p.add_argument("--from", dest="source", choices=("store", "kafka"), default="store",
                   help="follow the event store (default) or Kafka toolcat.events")
    p.add_argument("--allowed-host", dest="allowed_hosts", action="append", default=[], metavar="NAME",
                   help="a name clients reach the server by, beside loopback ones and --host (repeat); "
                        "requests naming another host are refused with 421 (TOOLCAT_ALLOWED_HOSTS)")
    p.add_argument("--public-url", metavar="URL",
                   help="the server's URL as clients reach it, for absolute links (default: relative links)")
    # The MCP gateway alone (issue 34): on stdio for a desktop client, or fed by Kafka (--from kafka).
    p = commands.add("gateway", cmd_gateway, "run the MCP gateway alone: --stdio for a desktop client (relays to "
                     "the home's toolcat serve), --from kafka serves streamable HTTP fed by Kafka", "pipeline")
    p.add_argument("--stdio", action="store_true", help="speak MCP on stdin/stdout (a process a client starts)")
    p.add_argument("--token-file", type=Path, metavar="F",
                   help="with --stdio: the file holding a call token bound to a subject")
    p.add_argument("--from", dest="source", choices=("kafka",), help="feed it from Kafka (TOOLCAT_KAFKA_BOOTSTRAP)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8751, help="port to listen on (default 8751; 0: any free port)")
    commands.group("token", "bearer tokens for the HTTP server")
    p = commands.add("token create", cmd_token_create, "make a token (printed once; the home keeps its digest)",
                     "pipeline")
    p.add_argument("name", metavar="NAME", help="who uses it; over HTTP, the actor of its writes")
    p.add_argument("--scope", required=True, metavar="read[,write][,audit][,call]",
                   help="what the token may do, separated by commas: read, write, audit, or call (with --subject)")
    p.add_argument("--subject", metavar="agent:A|unit:U",
                   help="the subject a call token acts as over MCP (it then holds the call scope only)")
    p.add_argument("--expires-in", metavar="DURATION",
                   help="refused after this long, e.g. 30m, 12h, 7d (default: never)")
    p = commands.add("token list", cmd_token_list, "the home's tokens: scopes, subject, created, expires, last used "
                     "(never the token)", "pipeline")
    p = commands.add("token revoke", cmd_token_revoke, "forget a token: refused at once, its open streams end",
                     "pipeline")
    p.add_argument("name", metavar="NAME", help="the token's name")


def cmd_serve(ctx: Context) -> Reply:
    from infra.replica import mark_replica
    from infra.cli.served import answer_read
    from infra.serving import serve
    a = ctx.args
    if a.source == "kafka":
        mark_replica(ctx.settings)
    settings = ctx.settings.model_copy(update={
        "allowed_hosts": [*ctx.settings.allowed_hosts, *a.allowed_hosts],
        "public_url": a.public_url or ctx.settings.public_url})
    document = serve(settings, a.host, a.port, a.source, notices(ctx.as_json), answer_read)
    return Reply(document, [f"stopped serving {document['url']} at position {document['position']}"])


def cmd_gateway(ctx: Context) -> Reply:
    from domain.errors import UsageError
    a = ctx.args
    if a.stdio == (a.source == "kafka"):
        raise UsageError("toolcat gateway takes --stdio --token-file F, or --from kafka")
    if a.stdio:
        from infra.serving import gateway_stdio
        if a.token_file is None:
            raise UsageError("toolcat gateway --stdio needs --token-file F (a call token bound to a subject)")
        gateway_stdio(ctx.settings, a.token_file)
        return Reply({}, [])  # stdout was the MCP stream: nothing more is written to it
    from infra.serving import serve_gateway_from_kafka
    document = serve_gateway_from_kafka(ctx.settings, a.host, a.port, notices(ctx.as_json))
    return Reply(document, [f"stopped the gateway at {document['url']} at position {document['position']}"])


def cmd_token_create(ctx: Context) -> Reply:
    from infra.serving import create_token
    a = ctx.args
    made = create_token(ctx.settings.home, a.name, a.scope, a.subject, a.expires_in)
    token = made.pop("token")
    # v1.1's document ({name, token, scopes}) with v1.2's fields added.
    document = {"name": made["name"], "token": token, **{k: v for k, v in made.items() if k != "name"}}
    bound = f" as {made['subject']}" if made["subject"] else ""
    until = f", until {made['expires']}" if made["expires"] else ""
    return Reply(document, [f"token for {a.name}{bound} ({', '.join(made['scopes'])}{until}); "
                            "it is shown only this once:", token])


def cmd_token_list(ctx: Context) -> Reply:
    from infra.serving import list_tokens
    listed = list_tokens(ctx.settings.home)
    if not listed:
        return Reply(listed, ["no tokens: anonymous reads from loopback only "
                              "('toolcat token create NAME --scope read' makes one)"])
    columns = ["name", "scopes", "subject", "created", "expires", "last_used"]
    rows = [[t["name"], ",".join(t["scopes"]), t["subject"] or "", t["created"], t["expires"] or "never",
             t["last_used"] or "never"] for t in listed]
    return Reply(listed, [Table(None, columns, rows)])


def cmd_token_revoke(ctx: Context) -> Reply:
    from infra.serving import revoke_token
    revoked = revoke_token(ctx.settings.home, ctx.args.name)
    return Reply(revoked, [f"revoked the token of {revoked['name']}: a running server refuses it from now on"])
