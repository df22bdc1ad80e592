"""The command line's client of the server that owns its home's read model: each read command is sent to
the endpoint READ_ROUTES names (path parameters from its positional arguments, its other options as the
query or the body) and answered with the reply the server computed, so it prints as it would have."""
from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

import httpx

from domain.errors import ToolcatError, Unavailable
from infra.http.address import ServerAddress
from infra.http.problems import error_from_problem
from infra.read_routes import READ_ROUTES
from infra.reply import REPLY_MEDIA_TYPE, Reply, reply_from_json

# Reads bound themselves (--timeout); an audit replay of a long history takes minutes.
_READ_TIMEOUT = httpx.Timeout(600.0, connect=5.0)
_DEFAULT_TIMEOUT = 10.0  # a read's --timeout when not given (infra/context.py `freshness`)
# How often a read asks again a server that is catching up at start (it says Retry-After: 1; this client
# is on the same machine, and a command waiting a whole second more than needed is felt).
_STARTING_POLL_SECONDS = 0.1


class ServerClient:
    def __init__(self, address: ServerAddress) -> None:
        self.url = address.url
        self.http = httpx.Client(base_url=address.url, timeout=_READ_TIMEOUT,
                                 headers={"Authorization": f"Bearer {address.token}"})

    def close(self) -> None:
        self.http.close()

    def _send(self, method: str, path: str, accept: str, patience: float = 0.0, **request: Any) -> Any:
        """The answer's JSON; a server still catching up at start is asked again for up to `patience`
        seconds (a read's --timeout: the command line waits where an HTTP client is told 503)."""
        deadline = time.monotonic() + patience
        while True:
            try:
                response = self.http.request(method, path, headers={"Accept": accept}, **request)
            except httpx.HTTPError as error:
                raise Unavailable(f"the server at {self.url} did not answer: {error}", server=self.url) from error
            if response.status_code < 400:
                return response.json()
            error = error_from_problem(response.status_code, _json_or_none(response))
            if not error.details.get("catching_up") or time.monotonic() >= deadline:
                raise error
            time.sleep(_STARTING_POLL_SECONDS)

    def read(self, command: str, values: dict[str, Any]) -> Reply:
        """The reply of the read `command` with these option values (by dest), from the server."""
        return reply_from_json(self._request(command, values, REPLY_MEDIA_TYPE))

    def document(self, command: str, values: dict[str, Any]) -> Any:
        """The JSON answer of the read `command` (what `--json` prints, or the route's own JSON form)."""
        return self._request(command, values, "application/json")

    def _request(self, command: str, values: dict[str, Any], accept: str) -> Any:
        if command not in READ_ROUTES:
            raise ToolcatError(f"'{command}' is not served over HTTP yet; stop the server at {self.url} to run it",
                               command=command)
        method, template = READ_ROUTES[command]
        values = {k: v for k, v in values.items() if v is not None}
        path = template.format(**{name: quote(str(values.pop(name)), safe="") for name in _names(template)})
        patience = float(values.get("timeout") or _DEFAULT_TIMEOUT)
        return self._send(method, path, accept, patience,
                          **({"params": values} if method == "GET" else {"json": values}))

    def events_of_key(self, key: str, actor: str) -> list[dict[str, Any]]:
        return self._send("GET", "/v1/events", "application/json",
                          params={"idempotency_key": key, "actor": actor})["events"]


def _names(template: str) -> list[str]:
    return [part.split("}")[0] for part in template.split("{")[1:]]


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None
