"""Rejections of routing, nodes and secret references (ADR-027, ARCH-19), each with a stable code (exit 3)."""
from __future__ import annotations

from domain.errors import CatalogRuleError


class DuplicateRouteRule(CatalogRuleError):
    code = "duplicate_route_rule"


class UnknownRouteRule(CatalogRuleError):
    code = "unknown_route_rule"


class UnknownNode(CatalogRuleError):
    code = "unknown_node"


class NodeState(CatalogRuleError):
    """The node is not in the state the command needs (pairing twice, readying an unpaired node, …)."""

    code = "node_state"


class NodeNotEligible(CatalogRuleError):
    """An explicitly named node cannot take the call; `details.reason` says why."""

    code = "node_not_eligible"


class AmbiguousNodeSelection(CatalogRuleError):
    """No node given and no stable way to pick one: `details.candidates` lists the eligible nodes."""

    code = "ambiguous_node_selection"


class NotNodeBacked(CatalogRuleError):
    """The tool is not a capability-backed node tool, so no node serves it."""

    code = "not_node_backed"


class NotModelFacing(CatalogRuleError):
    """`tool.node.inspect` and `tool.node.dispatch` were removed from the model-facing surface (ARCH-19)."""

    code = "not_model_facing"


class CapabilityMirror(CatalogRuleError):
    """A node tool whose ID does not mirror a capability ID (`tyrum.x.y` → `tool.x.y`)."""

    code = "capability_mirror"


class DuplicateSecretRef(CatalogRuleError):
    code = "duplicate_secret_ref"


class UnknownSecretRef(CatalogRuleError):
    code = "unknown_secret_ref"


class SecretValueRefused(CatalogRuleError):
    """Something that would carry a secret value; the catalog holds references only, and never repeats
    what was given."""

    code = "secret_value_refused"


class SecretRefNotAllowed(CatalogRuleError):
    """The secret reference may not be given to this tool."""

    code = "secret_ref_not_allowed"


class NotASecretTool(CatalogRuleError):
    """A secret reference allows only the dedicated secret tools (ARCH-19's `tool.secret.*`)."""

    code = "not_secret_tool"


class DuplicateSecretAlias(CatalogRuleError):
    """A secret alias is unique within its agent's scope (ARCH-19)."""

    code = "duplicate_secret_alias"


class UnknownSecretAlias(CatalogRuleError):
    """No secret alias of that name in the agent's scope (an alias of another agent is not its)."""

    code = "unknown_secret_alias"


class SecretAliasNotAllowed(CatalogRuleError):
    """The alias's reference may go to the tool, but the agent's allowlist does not enable the tool for it."""

    code = "secret_alias_not_allowed"
