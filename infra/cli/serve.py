"""`toolcat serve` (the read model over HTTP, infra/http/) and `toolcat token create` (who may use it)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from infra.cli.output import Reply, notices
from infra.cli.registry import Commands

if TYPE_CHECKING:  # a command imports what it runs, when it runs (infra/cli/__init__.py)
    from infra.context import Context


def register(commands: Commands) -> None:
    p = commands.add("serve", cmd_serve, "own the read model and serve it over HTTP until stopped", "pipeline")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (not loopback: tokens required)")
    p.add_argument("--port", type=int, default=8750, help="port to listen on (0: any free port, see serve.json)")
    p.add_argument("--from", dest="source", choices=("store", "kafka"), default="store",
                   help="follow the event store (default) or Kafka toolcat.events")
    commands.group("token", "bearer tokens for the HTTP server")
    p = commands.add("token create", cmd_token_create, "make a token (printed once; the home keeps its digest)",
                     "pipeline")
    p.add_argument("name", metavar="NAME", help="who uses it; over HTTP, the actor of its writes")
    p.add_argument("--scope", required=True, metavar="read[,write][,audit]",
                   help="what the token may do, separated by commas: read, write, audit")


def cmd_serve(ctx: Context) -> Reply:
    from infra.replica import mark_replica
    from infra.cli.served import answer_read
    from infra.serving import serve
    a = ctx.args
    if a.source == "kafka":
        mark_replica(ctx.settings)
    document = serve(ctx.settings, a.host, a.port, a.source, notices(ctx.as_json), answer_read)
    return Reply(document, [f"stopped serving {document['url']} at position {document['position']}"])


def cmd_token_create(ctx: Context) -> Reply:
    from infra.serving import create_token, parse_scopes
    scopes = parse_scopes(ctx.args.scope)
    token = create_token(ctx.settings.home, ctx.args.name, scopes)
    document = {"name": ctx.args.name, "token": token, "scopes": scopes}
    return Reply(document, [f"token for {ctx.args.name} ({', '.join(scopes)}); it is shown only this once:",
                            token])
