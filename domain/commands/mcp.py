"""`mcp server add|change|remove`, `mcp record` and `mcp sync`: MCP server entries, the evidence of an
applied sync, and the sync itself (it reads the read model and connects upstream: infra/writing.py
carries it out).

A server's name is the `<server>` segment of its tools' IDs; it is the `name` field (the command line's
NAME), kept apart from the class's own `name` (the command as typed) by an alias."""
from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field, model_validator

from domain.commands.base import CatalogCommand, Command
from domain.errors import UsageError
from domain.mcp_servers import Connection, Evidence, check_server_name
from domain.mcp_tools import DRIFT_EXIT
from domain.values import Tier

if TYPE_CHECKING:
    from domain.base import Meta
    from domain.catalog import Catalog, WriteResult



def _pairs(option: str) -> BeforeValidator:
    """KEY=VALUE entries as the command line repeats them (`--env K=V …`), or a JSON object of them."""
    def parsed(value: Any) -> Any:
        if not isinstance(value, list):
            return value  # a JSON object: its keys and values are checked as a dict of strings
        pairs: dict[str, Any] = {}
        for index, entry in enumerate(value, start=1):
            key, sep, rest = entry.partition("=") if isinstance(entry, str) else ("", "", "")
            if not sep or not key:  # the entry is not repeated: it may be a secret typed in the wrong place
                raise ValueError(f"{option} entry {index} is not KEY=VALUE")
            if key in pairs:
                raise ValueError(f"{option} names {key} twice")
            pairs[key] = rest
        return pairs
    return BeforeValidator(parsed)


class _Connected(CatalogCommand):
    """The options that say how to reach a server: a command for stdio, or a streamable-HTTP URL."""

    server: str = Field(alias="name", description="the <server> segment of mcp.<server>.<tool>")
    command: str | None = Field(None, description="the program that runs the server on stdio")
    args: list[str] = Field(default_factory=list, description="the program's arguments, in order")
    env: Annotated[dict[str, str], _pairs("--env")] = Field(
        default_factory=dict, description="plain, non-secret environment variables (KEY=VALUE entries or an object)")
    env_ref: Annotated[dict[str, str], _pairs("--env-ref")] = Field(
        default_factory=dict, description="environment variables taken from secret references such as "
                                          "env:GITHUB_TOKEN (KEY=REF entries or an object)")
    url: str | None = Field(None, description="the server's streamable HTTP endpoint")
    header_ref: Annotated[dict[str, str], _pairs("--header-ref")] = Field(
        default_factory=dict, description="HTTP headers taken from secret references (NAME=REF entries or an object)")

    def connection(self) -> Connection:
        """The connection the options give, checked (a secret value is refused and never repeated)."""
        return Connection.checked(self.command, self.args, self.env, self.env_ref, self.url, self.header_ref)


class McpServerAdd(_Connected):
    name: ClassVar[str] = "mcp server add"
    tier: Tier = Field("advanced", description="the tier of the server's tools")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        check_server_name(self.server)
        return catalog.add_mcp_server(self.server, self.connection(), self.tier, meta)


class McpServerChange(_Connected):
    """A new connection replaces the old one whole; a tier alone keeps the connection."""
    name: ClassVar[str] = "mcp server change"
    tier: Tier | None = Field(None, description="the tier of the server's tools")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        given = self.command is not None or self.url is not None
        if not given and (self.args or self.env or self.env_ref or self.header_ref):
            raise UsageError("a connection is replaced whole: give --command or --url with its options")
        return catalog.change_mcp_server(self.server, self.connection() if given else None, self.tier, meta)


class McpServerRemove(CatalogCommand):
    """The entry goes; its tools stay in the catalog."""
    name: ClassVar[str] = "mcp server remove"
    server: str = Field(alias="name")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.remove_mcp_server(self.server, meta)


class McpRecord(CatalogCommand):
    """The last command of every proposal of `mcp sync`: what the server said when it was synced. The
    proposal holds the evidence itself (its stored command's inputs), never the name of a file."""
    name: ClassVar[str] = "mcp record"
    server: str = Field(alias="name")
    evidence: Evidence = Field(description="serverInfo, protocol version, tools/list hash, tool names, tools "
                                           "gone upstream (a FILE.json on the command line)")

    def run(self, catalog: Catalog, meta: Meta) -> WriteResult:
        return catalog.record_mcp_sync(self.server, self.evidence, meta)


class McpSync(Command):
    """Read a server's tools/list and plan the catalog's changes as a proposal."""
    name: ClassVar[str] = "mcp sync"
    server: str = Field(alias="name")
    apply: bool = Field(False, description="apply the plan at once when it holds nothing destructive")
    check: bool = Field(False, description=f"change nothing; exit {DRIFT_EXIT} (over HTTP: the answer's "
                                           "`drift`) when the live inventory differs from the catalog")

    @model_validator(mode="after")
    def _one_mode(self) -> McpSync:
        if self.apply and self.check:
            raise ValueError("apply and check exclude each other: --check changes nothing")
        return self

    @property
    def mode(self) -> str:
        return "apply" if self.apply else "check" if self.check else "plan"
