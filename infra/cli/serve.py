"""`toolcat serve` (the read model over HTTP, infra/http/) and `toolcat token create|list|revoke` (who may
use it)."""
from __future__ import annotations

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
    # The MCP gateway alone (issue 34); `--stdio` is the other way to run it.
    p = commands.add("gateway", cmd_gateway, "run the MCP gateway alone: --from kafka serves streamable HTTP, "
                     "fed by the effective-tools changelog and the events topic (no read model)", "pipeline")
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
    document = serve(ctx.settings, a.host, a.port, a.source, notices(ctx.as_json), answer_read)
    return Reply(document, [f"stopped serving {document['url']} at position {document['position']}"])


def cmd_gateway(ctx: Context) -> Reply:
    from domain.errors import UsageError
    from infra.serving import serve_gateway_from_kafka
    a = ctx.args
    if a.source != "kafka":
        raise UsageError("toolcat gateway needs --from kafka (the MCP endpoint fed by Kafka)")
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
