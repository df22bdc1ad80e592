"""MCP servers as catalog entities: how to reach one (a command for stdio, or a streamable-HTTP URL), and
what each applied sync found there (DESIGN.md sections 3 and 8).

A server's name is the `<server>` segment of the `mcp.<server>.<tool>` IDs of its tools, so it obeys that
segment's grammar. Credentials are only ever secret references, `SCHEME:NAME` (`env:GITHUB_TOKEN`): the
reference is stored, the value never is; it is resolved when a connection is opened (infra/mcp/secrets.py).
Plain `--env K=V` values are allowed for settings that are not secret (`LOG_LEVEL=debug`); a variable whose
name says it holds a credential must be given as a reference, and its value is never repeated."""
from __future__ import annotations

import re
import uuid
from typing import Any, Literal

from eventsourcing.domain import Aggregate
from pydantic import BaseModel, ConfigDict, Field, field_validator

from domain.base import CatalogEvent, Meta, create, natural_id, record
from domain.errors import CatalogRuleError, InvalidName, UsageError
from domain.grammar import NAME_MAX, check_text, shown
from domain.route_errors import SecretValueRefused

# The `<server>` segment of the tyrum policy's `mcp.<server>.<tool>` shape (domain/naming.py).
_SERVER = re.compile(r"[a-z][a-z0-9-]*")
_ENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
# A secret reference: a resolver's scheme and the name it resolves, e.g. env:GITHUB_TOKEN.
_REF = re.compile(r"[a-z][a-z0-9-]*:[A-Za-z0-9_][A-Za-z0-9_.-]*")
REF_MAX = 128
# Variable names that say they hold a credential: their values are references, never plain text.
_SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "APIKEY", "PRIVATE_KEY",
                 "AUTH", "COOKIE")
ARG_MAX, ARGS_MAX = 1000, 100
URL_MAX = 2000


class UnknownMcpServer(CatalogRuleError):
    code = "unknown_mcp_server"


class DuplicateMcpServer(CatalogRuleError):
    code = "duplicate_mcp_server"


def check_server_name(name: str) -> str:
    if not isinstance(name, str) or len(name) > NAME_MAX or not _SERVER.fullmatch(name):
        raise InvalidName(f"MCP server name {shown(name)} must be the <server> segment of mcp.<server>.<tool>: "
                          f"lowercase ASCII letters, digits and '-', starting with a letter, at most {NAME_MAX} "
                          "characters", kind="mcp server", name=shown(name), limit=NAME_MAX)
    return name


def check_secret_ref(ref: str) -> str:
    """A reference such as env:GITHUB_TOKEN; what was given is never repeated (it may be a value)."""
    if not isinstance(ref, str) or len(ref) > REF_MAX or not _REF.fullmatch(ref):
        raise SecretValueRefused("a secret reference is SCHEME:NAME such as env:GITHUB_TOKEN (the scheme names "
                                 "the resolver); what was given is not one and is not repeated here, as it may "
                                 "be a secret value")
    return ref


def names_a_secret(key: str) -> bool:
    upper = key.upper()
    return any(word in upper for word in _SECRET_WORDS)


class Connection(BaseModel):
    """How to reach a server; never a secret value (references only)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    transport: Literal["stdio", "http"]
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)       # plain, non-secret values
    env_refs: dict[str, str] = Field(default_factory=dict)  # variable → secret reference
    url: str | None = None
    header_refs: dict[str, str] = Field(default_factory=dict)  # HTTP header → secret reference

    @classmethod
    def checked(cls, command: str | None, args: list[str], env: dict[str, str], env_refs: dict[str, str],
                url: str | None, header_refs: dict[str, str]) -> Connection:
        if (command is None) == (url is None):
            raise UsageError("give either --command (a stdio server) or --url (a streamable HTTP server)")
        if url is not None:
            if args or env or env_refs:
                raise UsageError("--arg, --env and --env-ref belong to a stdio server (--command), not to --url")
            if len(url) > URL_MAX or not re.fullmatch(r"https?://[^\s]+", url):
                raise UsageError(f"--url must be an http:// or https:// URL of at most {URL_MAX} characters",
                                 option="--url")
            if re.match(r"https?://[^/@]*@", url):
                raise SecretValueRefused("--url carries user information (user:password@); give credentials "
                                         "as --header-ref NAME=REF instead; the URL is not repeated here")
            for header, ref in header_refs.items():
                _check_key(header, _HEADER, "HTTP header")
                check_secret_ref(ref)
            return cls(transport="http", url=url, header_refs=header_refs)
        if header_refs:
            raise UsageError("--header-ref belongs to a streamable HTTP server (--url), not to --command")
        assert command is not None
        check_text(command, "command")
        if not command.strip() or "\n" in command or len(command) > ARG_MAX:
            raise UsageError(f"--command must be one line naming a program, at most {ARG_MAX} characters")
        if len(args) > ARGS_MAX or any(len(a) > ARG_MAX or "\n" in a for a in args):
            raise UsageError(f"at most {ARGS_MAX} --arg values of one line and {ARG_MAX} characters each")
        for arg in args:
            check_text(arg, "argument")
        for key, value in env.items():
            _check_key(key, _ENV_KEY, "environment variable")
            if names_a_secret(key):
                raise SecretValueRefused(f"the variable {key} is named like a credential: give it as --env-ref "
                                         f"{key}=env:NAME (a reference resolved when connecting), never as a "
                                         "value; the value given is not repeated here", variable=key)
            check_text(value, f"the value of {key}")
        for key, ref in env_refs.items():
            _check_key(key, _ENV_KEY, "environment variable")
            check_secret_ref(ref)
        both = sorted(set(env) & set(env_refs))
        if both:
            raise UsageError(f"{', '.join(both)} given both as --env and --env-ref", variables=both)
        return cls(transport="stdio", command=command, args=list(args), env=env, env_refs=env_refs)

    def references(self) -> list[str]:
        return sorted({*self.env_refs.values(), *self.header_refs.values()})


def _check_key(key: str, grammar: re.Pattern[str], what: str) -> None:
    if len(key) > NAME_MAX or not grammar.fullmatch(key):
        raise UsageError(f"{what} name {shown(key)} is not one (letters, digits and _ or -)", name=shown(key))


class Evidence(BaseModel):
    """What a sync's proposal records when applied (`toolcat mcp record`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    server_name: str | None
    server_version: str | None
    protocol_version: str | None
    tools_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    tool_count: int = Field(ge=0)
    listed_at: str
    # [{"tool_id", "upstream_name", "title", "output_schema", "annotations"}] (domain/mcp_tools.DESCRIBED)
    tools: list[dict[str, Any]]
    gone: list[str]

    @field_validator("tools")
    @classmethod
    def _described(cls, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Every tool says what agents see of it, None where the server gave nothing (the stored form)."""
        return [{"title": None, "output_schema": None, "annotations": None, **tool} for tool in tools]


def mcp_server_key(name: str) -> uuid.UUID:
    return natural_id("mcp_server", name)


class McpServer(Aggregate):
    """One MCP server entry. Stored format: each event's class version 1, but Synced's 2 (see it)."""

    TOPIC = "McpServer"

    class Event(CatalogEvent):
        TOPIC = "McpServer.Event"

    class Added(Event, Aggregate.Created):
        TOPIC = "McpServer.Added"
        class_version = 1
        name: str
        connection: dict[str, Any]
        tier: str

        def apply(self, server: McpServer) -> None:
            server.name, server.tier, server.removed = self.name, self.tier, False
            server.connection = Connection.model_validate(self.connection)
            server.last_sync, server.gone = None, set()

    class Changed(Event):
        """The whole entry as it now stands (also a removed server added again)."""

        TOPIC = "McpServer.Changed"
        class_version = 1
        name: str
        connection: dict[str, Any]
        tier: str

        def apply(self, server: McpServer) -> None:
            server.connection = Connection.model_validate(self.connection)
            server.tier, server.removed = self.tier, False

    class Removed(Event):
        """The entry is gone; its tools stay in the catalog (a sync never deletes a tool)."""

        TOPIC = "McpServer.Removed"
        class_version = 1
        name: str

        def apply(self, server: McpServer) -> None:
            server.removed = True

    class Synced(Event):
        """Evidence of an applied sync: what the server said of itself, a hash of its tools/list, which
        upstream name each tool ID calls, and the tools gone upstream (deprecated in `release`, the latest
        published when applied; their window is ARCH-21's).

        Class version 2: each tool also carries what agents see of it through the gateway, its `title`,
        `output_schema` and `annotations` (domain/mcp_tools.described; each None when the server gave none).
        Version 1 recorded none of them: read as None."""

        TOPIC = "McpServer.Synced"
        class_version = 2
        name: str
        server_name: str | None
        server_version: str | None
        protocol_version: str | None
        tools_hash: str
        tool_count: int
        listed_at: str
        tools: list[dict[str, Any]]  # [{"tool_id", "upstream_name", "title", "output_schema", "annotations"}]
        gone: list[str]              # tool IDs the server no longer lists, deprecated by this sync
        release: str | None

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state["tools"] = [{**tool, "title": None, "output_schema": None, "annotations": None}
                              for tool in state["tools"]]

        def apply(self, server: McpServer) -> None:
            server.last_sync = self.tools_hash
            server.gone = (server.gone - {t["tool_id"] for t in self.tools}) | set(self.gone)

    def __init__(self) -> None:
        self.name: str
        self.connection: Connection
        self.tier: str
        self.removed: bool
        self.last_sync: str | None
        self.gone: set[str]

    @classmethod
    def add(cls, name: str, connection: Connection, tier: str, meta: Meta) -> McpServer:
        return create(cls, cls.Added, mcp_server_key(check_server_name(name)), meta, name=name,
                      connection=connection.model_dump(mode="json"), tier=tier)

    def change(self, connection: Connection, tier: str, meta: Meta) -> None:
        record(self, self.Changed, meta, name=self.name, connection=connection.model_dump(mode="json"), tier=tier)

    def remove(self, meta: Meta) -> None:
        record(self, self.Removed, meta, name=self.name)

    def synced(self, evidence: Evidence, release: str | None, meta: Meta) -> None:
        record(self, self.Synced, meta, name=self.name, release=release, **evidence.model_dump())

    def document(self) -> dict[str, Any]:
        """What `mcp server show` answers: references by name, never a value."""
        return {"name": self.name, "tier": self.tier, "removed": self.removed,
                **self.connection.model_dump(mode="json")}
