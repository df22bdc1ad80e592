"""Every rejection the catalog can give, each with a stable code and exit status.

The codes and exit statuses are part of the public command-line contract; never change one in place.
"""
from __future__ import annotations

from typing import Any


class ToolcatError(Exception):
    """Base of every error the CLI turns into an exit status and an error document."""

    code = "error"
    exit_code = 1

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def as_document(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class UsageError(ToolcatError):
    """Bad option, missing argument, unreadable file (exit 2)."""

    code = "usage"
    exit_code = 2


class CatalogRuleError(ToolcatError):
    """A command broke a catalog rule (exit 3); subclasses name which."""

    exit_code = 3


class InvalidId(CatalogRuleError):
    code = "invalid_id"


class ReservedPrefix(CatalogRuleError):
    code = "reserved_prefix"


class ReservedId(CatalogRuleError):
    code = "reserved_id"


class DuplicateTool(CatalogRuleError):
    code = "duplicate_tool"


class AliasConflict(CatalogRuleError):
    code = "alias_conflict"


class UnknownTool(CatalogRuleError):
    code = "unknown_tool"


class RetiredAlias(CatalogRuleError):
    code = "retired_alias"


class UnknownRelease(CatalogRuleError):
    code = "unknown_release"


class ReleaseOrder(CatalogRuleError):
    code = "release_order"


class WindowOpen(CatalogRuleError):
    code = "window_open"


class StepsIncomplete(CatalogRuleError):
    code = "steps_incomplete"


class InvalidSchema(CatalogRuleError):
    code = "invalid_schema"


class NotAnAlias(CatalogRuleError):
    """The ID names a canonical tool where an alias was expected."""

    code = "not_an_alias"


class AliasState(CatalogRuleError):
    """The alias is not in the lifecycle state the command needs (e.g. deprecating twice)."""

    code = "alias_state"


class DuplicateMilestone(CatalogRuleError):
    code = "duplicate_milestone"


class DuplicateStep(CatalogRuleError):
    code = "duplicate_step"


class PolicyAlreadySet(CatalogRuleError):
    code = "policy_already_set"


class InvalidPolicy(CatalogRuleError):
    code = "invalid_policy"


class Conflict(ToolcatError):
    """A concurrent writer changed the same thing first (exit 4)."""

    code = "conflict"
    exit_code = 4


class IdempotencyKeyReused(Conflict):
    code = "idempotency_key_reused"


class IntegrityFailure(ToolcatError):
    """The history was altered or has a gap (exit 5)."""

    code = "integrity"
    exit_code = 5


class Unavailable(ToolcatError):
    """A database or broker could not be reached after bounded retries (exit 6)."""

    code = "unavailable"
    exit_code = 6


class UnknownSubject(CatalogRuleError):
    code = "unknown_subject"


class DuplicateSubject(CatalogRuleError):
    code = "duplicate_subject"


class InvalidName(CatalogRuleError):
    """A name outside its grammar (domain/grammar.py): unit, agent, connector, namespace, image
    reference, idempotency key, …; `details.kind` says which."""

    code = "invalid_name"


class InvalidText(CatalogRuleError):
    """A reason, description, evidence or actor that is too long or holds a control or bidi character."""

    code = "invalid_text"


class UnknownConnector(CatalogRuleError):
    code = "unknown_connector"


class DuplicateConnector(CatalogRuleError):
    code = "duplicate_connector"


class AlreadyBound(CatalogRuleError):
    code = "already_bound"


class NotBound(CatalogRuleError):
    code = "not_bound"


class UnknownGrant(CatalogRuleError):
    code = "unknown_grant"


class DuplicateGrant(CatalogRuleError):
    code = "duplicate_grant"


class InvalidPattern(CatalogRuleError):
    """A grant target or allowlist pattern of the wrong shape."""

    code = "invalid_pattern"


class SqlRefused(CatalogRuleError):
    """User SQL that is not one read-only query (a file read or write, a setting, several statements)."""

    code = "sql_refused"


class SqlTimeout(CatalogRuleError):
    """User SQL that ran longer than the statement timeout and was stopped."""

    code = "sql_timeout"


class SqlError(ToolcatError):
    """User SQL that DuckDB could not run: a syntax error, an unknown table or column, a type error. Exit 2,
    as for any other bad argument, with a code of its own."""

    code = "sql_error"
    exit_code = 2


# -- the seed rules of issue 13 (ARCH-21, Spring Voyage tools, ADR-0030) --------------------------------

class NamespaceOwned(CatalogRuleError):
    """A tool namespace belongs to the plugin, connector or image that first registered in it."""

    code = "namespace_owned"


class LegacyId(CatalogRuleError):
    """A deprecated or retired ID never becomes canonical again."""

    code = "legacy_id"


class ShimId(CatalogRuleError):
    """A legacy parser shim (or shim pattern) of the policy is never a canonical ID."""

    code = "shim_id"


class ShimTarget(CatalogRuleError):
    """A documented legacy shim is recorded only as a shim (`--shim`) of the ID the policy maps it to."""

    code = "shim_target"


class LegacyReferences(CatalogRuleError):
    """Removal step 2 (stored data migrated) while the catalog's own data still names the legacy ID."""

    code = "legacy_references"


class RiskRequired(CatalogRuleError):
    """A write tool under a verb-noun policy needs its risk tag."""

    code = "risk_required"


class NotModelFacing(CatalogRuleError):
    """A runtime-only tool never enters an agent's tool set."""

    code = "not_model_facing"
# -- proposals (catalog as code) -------------------------------------------------------------------------
class UnknownProposal(CatalogRuleError):
    code = "unknown_proposal"


class ProposalClosed(CatalogRuleError):
    """The proposal was already applied or withdrawn."""

    code = "proposal_closed"


class ConfirmationRequired(CatalogRuleError):
    """A proposal with destructive commands applied without `--confirm-destructive`."""

    code = "confirmation_required"


class StaleProposal(Conflict):
    """The catalog changed after the position a proposal was planned against: plan again (exit 4)."""

    code = "stale_proposal"


class UnsupportedChange(CatalogRuleError):
    """A manifest asks for a change no command makes (removing a tool, a unit, an agent, ...)."""

    code = "unsupported_change"


class IncompatibleSchema(CatalogRuleError):
    """A new input schema breaks calls the catalog's compatibility mode keeps valid (domain/schema_compat.py)."""

    code = "incompatible_schema"
