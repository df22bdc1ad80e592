"""The command line's client of the server that owns its home's read model: each read command is sent to
the endpoint READ_ROUTES names (path parameters from its positional arguments, its other options as the
query or the body) and answered with the reply the server computed, so it prints as it would have."""
from __future__ import annotations

import argparse
from typing import Any
from urllib.parse import quote

import httpx

from domain.errors import ToolcatError, Unavailable
from infra.cli.output import Reply, reply_from_json
from infra.http.address import ServerAddress
from infra.http.answers import REPLY_MEDIA_TYPE
from infra.http.commands import READ_ROUTES, options_of
from infra.http.problems import error_from_problem

# Reads bound themselves (--timeout); an audit replay of a long history takes minutes.
_READ_TIMEOUT = httpx.Timeout(600.0, connect=5.0)


def command_of(args: argparse.Namespace) -> str:
    words = (args.command, getattr(args, "subcommand", None), getattr(args, "subsubcommand", None))
    return " ".join(word for word in words if word)  # `mcp server show` has three


class ServerClient:
    def __init__(self, address: ServerAddress) -> None:
        self.url = address.url
        self.http = httpx.Client(base_url=address.url, timeout=_READ_TIMEOUT,
                                 headers={"Authorization": f"Bearer {address.token}"})

    def close(self) -> None:
        self.http.close()

    def _send(self, method: str, path: str, accept: str, **request: Any) -> Any:
        try:
            response = self.http.request(method, path, headers={"Accept": accept}, **request)
        except httpx.HTTPError as error:
            raise Unavailable(f"the server at {self.url} did not answer: {error}", server=self.url) from error
        if response.status_code >= 400:
            raise error_from_problem(response.status_code, _json_or_none(response))
        return response.json()

    def reply(self, args: argparse.Namespace) -> Reply:
        """Run a read command on the server."""
        command = command_of(args)
        if command == "audit report":  # the file is written here, where the command runs
            from infra.cli.audit import report_reply
            report = self._send("GET", READ_ROUTES[command][1], "application/json",
                                params=_without_none({"alias": args.alias, "format": "json"}))
            return report_reply(report, args.format, args.output)
        if command not in READ_ROUTES:
            raise ToolcatError(f"'{command}' is not served over HTTP yet; stop the server at {self.url} to run it",
                               command=command)
        method, template = READ_ROUTES[command]
        values = {o.dest: getattr(args, o.dest, None) for o in options_of(command)
                  if getattr(args, o.dest, None) not in (None, False, o.default)}
        path = template.format(**{name: quote(str(values.pop(name)), safe="") for name in _names(template)})
        sent = {"params": values} if method == "GET" else {"json": values}
        return reply_from_json(self._send(method, path, REPLY_MEDIA_TYPE, **sent))

    def document(self, argv: list[str]) -> Any:
        """The document of the read command `argv`, from the server."""
        from infra.cli import parse_command
        return self.reply(parse_command(argv)).document

    def events_of_key(self, key: str) -> list[dict[str, Any]]:
        return self._send("GET", "/v1/events", "application/json", params={"idempotency_key": key})["events"]


def _names(template: str) -> list[str]:
    return [part.split("}")[0] for part in template.split("{")[1:]]


def _without_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None
