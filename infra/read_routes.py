"""Where the server serves each read command: the server's routes and the command line's client of a
running server (infra/remote.py) both read this one table."""
from __future__ import annotations

# Each read command and the path serving it; path parameters are the command's positional arguments.
# The command's other options are the query string (GET) or the JSON body (POST).
READ_ROUTES: dict[str, tuple[str, str]] = {
    "tool list": ("GET", "/v1/tools"),
    "tool show": ("GET", "/v1/tools/{id}"),
    "resolve": ("GET", "/v1/resolve/{id}"),
    "effective": ("GET", "/v1/subjects/{subject}/effective"),
    "explain": ("GET", "/v1/subjects/{subject}/explain/{tool}"),
    "audit verify": ("GET", "/v1/audit/verify"),
    "audit fingerprint": ("GET", "/v1/audit/fingerprint"),
    "audit alias": ("GET", "/v1/audit/aliases/{alias}"),
    "audit replay": ("GET", "/v1/audit/replay"),
    "audit report": ("GET", "/v1/audit/report"),
    "sql": ("POST", "/v1/sql"),
    "route check": ("GET", "/v1/subjects/{subject}/route-check"),
    "route node": ("GET", "/v1/route/node/{tool}"),
    "secret alias resolve": ("GET", "/v1/subjects/{subject}/secret-aliases/{alias}"),
    "proposal list": ("GET", "/v1/proposals"),
    "proposal show": ("GET", "/v1/proposals/{proposal_id}"),
    "audit what-if": ("GET", "/v1/audit/what-if"),
    "who-can": ("GET", "/v1/tools/{tool}/who-can"),
    "mcp server list": ("GET", "/v1/mcp/servers"),
    "mcp server show": ("GET", "/v1/mcp/servers/{name}"),
}
