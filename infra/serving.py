"""What the command line asks of the HTTP server (infra/http/), in one place: start it (`toolcat serve`),
make, list and revoke its tokens (`toolcat token …`), read or request the snapshot it publishes (`export`).
infra/cli and infra/http never import each other; the command line comes through here, and the server
answers reads with the command line's `answer_read` handed over as it starts. Each import is made when
asked for: the HTTP stack loads only for the commands that use it."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infra.settings import Settings

if TYPE_CHECKING:
    import duckdb

    from infra.http.answers import AnswerRead


def serve(settings: Settings, host: str, port: int, source: str, say: Callable[[str], None],
          answer_read: AnswerRead) -> dict[str, Any]:
    from infra.http.server import serve as run_server
    return run_server(settings, host, port, source, say, answer_read)


def serve_gateway_from_kafka(settings: Settings, host: str, port: int, say: Callable[[str], None]) -> dict[str, Any]:
    """`toolcat gateway --from kafka`: the MCP endpoint alone, fed by Kafka."""
    from infra.http.kafka_gateway import serve_gateway
    return serve_gateway(settings, host, port, say)


def create_token(home: Path, name: str, scope: str, subject: str | None, expires_in: str | None) -> dict[str, Any]:
    """`toolcat token create`: the new token (shown once) and what is recorded of it."""
    from infra.http import auth
    duration = None if expires_in is None else auth.parse_duration(expires_in)
    return auth.issue_token(home, name, auth.parse_scopes(scope), subject, duration)


def list_tokens(home: Path) -> list[dict[str, Any]]:
    from infra.http.auth import list_tokens as listed
    return listed(home)


def revoke_token(home: Path, name: str) -> dict[str, Any]:
    from infra.http.auth import revoke_token as revoke
    return revoke(home, name)


def fresh_snapshot(settings: Settings, head: int) -> duckdb.DuckDBPyConnection | None:
    """The home's snapshot when it holds everything up to `head`, asking a running server for one if needed."""
    from infra.http import snapshot
    con = snapshot.open_snapshot(settings.home, head)
    if con is None and snapshot.request_snapshot(settings) is not None:
        con = snapshot.open_snapshot(settings.home, head)
    return con


def gateway_stdio(settings: Settings, token_file: Path) -> dict[str, Any]:
    """`toolcat gateway --stdio`: relay MCP between stdin/stdout and the /mcp of the server running on the
    home (infra/mcp/gateway/stdio.py says why there)."""
    import anyio

    from domain.errors import Unavailable, UsageError
    from infra.http.address import live_address
    from infra.mcp.gateway.stdio import relay
    try:
        token = token_file.read_text().strip()
    except OSError as error:
        raise UsageError(f"--token-file {token_file}: {error.strerror or error}", token_file=str(token_file)) from None
    if not token:
        raise UsageError(f"--token-file {token_file} is empty: it holds the token of 'toolcat token create NAME "
                         "--subject agent:A --scope call'", token_file=str(token_file))
    address = live_address(settings.home)
    if address is None:
        raise Unavailable(f"no toolcat serve runs on {settings.home}: the gateway on stdio relays to its /mcp "
                          "(start it with 'toolcat serve')", home=str(settings.home))
    anyio.run(relay, f"{address.url}/mcp", token, settings.mcp_request_seconds)
    return {"url": f"{address.url}/mcp"}
