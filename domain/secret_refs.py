"""Secret references (ARCH-19): the catalog records that a secret exists and which tools may receive it —
never a value. Nothing here may repeat what the operator typed when refusing it: a mistyped command may
carry a value."""
from __future__ import annotations

import re
import uuid

from eventsourcing.domain import Aggregate

from domain.base import CatalogEvent, Meta, create, natural_id, record
from domain.route_errors import NotASecretTool, SecretRefNotAllowed, SecretValueRefused

REF_MAX, NAME_REF_MAX = 512, 128  # an ARN or a manager's path is longer than a name
# Opaque lowercase names such as `github-token` or `ops.deploy-key`: short, readable, never value-like.
_REF = re.compile(r"[a-z][a-z0-9-]*(?:[.][a-z][a-z0-9-]*)*")
# ...or a reference as the secret managers name their secrets (ARCH-19 gives the shape of the record, not of
# the name): each scheme with the path grammar of its manager, so a bare value never passes for one.
_SEGMENT = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
_MANAGER_REFS = (
    re.compile(rf"vault:{_SEGMENT}(?:/{_SEGMENT})*(?:#{_SEGMENT})?"),                  # vault:kv/github#token
    re.compile(rf"op://{_SEGMENT}/{_SEGMENT}(?:/{_SEGMENT})?/{_SEGMENT}"),            # op://vault/item/field
    re.compile(r"arn:aws(?:-[a-z]+)*:secretsmanager:[a-z]{2}(?:-[a-z]+)+-[0-9]:[0-9]{12}:secret:"
               r"[A-Za-z0-9/_+=.@-]+"),                                                # AWS Secrets Manager ARN
    re.compile(r"projects/[a-z0-9-]+/secrets/[A-Za-z0-9_-]+(?:/versions/(?:latest|[0-9]+))?"),  # GCP
    re.compile(r"env:[A-Za-z_][A-Za-z0-9_]*"),                                         # env:GITHUB_TOKEN
)
SECRET_TOOL_PREFIX = "tool.secret."  # ARCH-19's dedicated secret tools (tool.secret.copy-to-node-clipboard)


def check_ref(ref: str) -> str:
    if not isinstance(ref, str) or len(ref) > REF_MAX or not (
            (len(ref) <= NAME_REF_MAX and _REF.fullmatch(ref)) or any(p.fullmatch(ref) for p in _MANAGER_REFS)):
        raise SecretValueRefused(
            "a secret reference is a lowercase name such as github-token, or the name a secret manager gives "
            "the secret: vault:kv/github, op://vault/item/field, arn:aws:secretsmanager:REGION:ACCOUNT:secret:"
            "NAME, projects/P/secrets/S, env:GITHUB_TOKEN; what was given is not one and is not repeated here, "
            "as it may be a secret value")
    return ref


def check_secret_tool(tool_id: str, entry: int) -> None:
    """A reference is given only to the dedicated secret tools (ARCH-19), never to an ordinary tool."""
    if not tool_id.startswith(SECRET_TOOL_PREFIX):
        raise NotASecretTool(f"--allow-tool entry {entry} is '{tool_id}', which is not a dedicated secret tool: "
                             f"a secret reference is for the {SECRET_TOOL_PREFIX}* tools only, such as "
                             "tool.secret.copy-to-node-clipboard", tool_id=tool_id, entry=entry,
                             prefix=SECRET_TOOL_PREFIX)


def secret_ref_key(ref: str) -> uuid.UUID:
    return natural_id("secret_ref", ref)


class SecretRef(Aggregate):
    TOPIC = "SecretRef"

    class Event(CatalogEvent):
        TOPIC = "SecretRef.Event"

    class Added(Event, Aggregate.Created):
        TOPIC = "SecretRef.Added"
        ref: str
        allowed_tool_ids: list[str]
        allowed_tool_keys: list[str]

        def apply(self, secret: SecretRef) -> None:
            secret.ref = self.ref
            secret.allowed = dict(zip(self.allowed_tool_keys, self.allowed_tool_ids))

    class ToolsRewritten(Event):
        """The allowed tools' IDs rewritten to their canonical IDs (`alias migrate`); the keys never change."""

        TOPIC = "SecretRef.ToolsRewritten"
        ref: str
        allowed_tool_ids: list[str]
        allowed_tool_keys: list[str]

        def apply(self, secret: SecretRef) -> None:
            secret.allowed = dict(zip(self.allowed_tool_keys, self.allowed_tool_ids))

    def __init__(self) -> None:
        self.ref: str
        self.allowed: dict[str, str]

    @classmethod
    def add(cls, ref: str, allowed: dict[str, str], meta: Meta) -> SecretRef:
        """`allowed`: tool key → canonical ID of every tool the reference may be given to."""
        return create(cls, cls.Added, secret_ref_key(check_ref(ref)), meta, ref=ref,
                      allowed_tool_ids=list(allowed.values()), allowed_tool_keys=list(allowed))


    def rewrite_tools(self, allowed: dict[str, str], meta: Meta) -> None:
        record(self, self.ToolsRewritten, meta, ref=self.ref, allowed_tool_ids=list(allowed.values()),
               allowed_tool_keys=list(allowed))


def check_allowed(ref: str, allowed_tool_keys: list[str], tool_id: str, tool_key: str) -> None:
    if tool_key not in allowed_tool_keys:
        raise SecretRefNotAllowed(f"secret reference '{ref}' may not be given to '{tool_id}'",
                                  secret_ref_id=ref, tool_id=tool_id)
