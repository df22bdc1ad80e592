"""Facts about the read model's tables that the code relies on, each written once.

The SQL files under `projections/sql/` refer to them by name (`{{as_of}}`, `{{effective_fields}}`, …);
`projections/sqlfiles.py` fills them in.
"""
from __future__ import annotations

# Every type-2 history table: one row per version of a key, valid from `valid_from` (an event position,
# inclusive) until `valid_to` (exclusive; NULL while current).
HISTORY_TABLES = ("tool_history", "alias_history", "platform_namespaces", "pattern_shims", "unit_history",
                  "agent_history", "allowlist_history", "image_history", "connector_history", "binding_history",
                  "grant_history", "tool_class_history", "route_rule_history", "node_history",
                  "secret_ref_history", "tool_schema_history", "mcp_server_history",
                  "mcp_tool_history", "secret_alias_history", "unit_image_history")

# History tables whose versions also record when they took effect (`--effective-at`):
# effective_from / effective_to beside valid_from / valid_to.
BITEMPORAL_TABLES = ("binding_history", "grant_history")

# A version known at position $at.
AS_OF = "valid_from <= $at AND (valid_to IS NULL OR valid_to > $at)"

# For bitemporal tables: with $effective_at NULL, the same as AS_OF; with it set, the versions in effect at
# that time as far as was known at $at — a version already ended at $at still counts while its end had not
# taken effect, and a version never counts before it took effect.
IN_EFFECT = (f"({AS_OF} OR ($effective_at::TIMESTAMPTZ IS NOT NULL AND valid_from <= $at "
             "AND effective_to > $effective_at::TIMESTAMPTZ)) "
             "AND ($effective_at::TIMESTAMPTZ IS NULL OR effective_from <= $effective_at::TIMESTAMPTZ)")

# One row of an effective set as `toolcat effective` answers it (the order of effective_documents' JSON);
# effective_tools holds these after its key (subject_kind, subject, tool_key).
EFFECTIVE_FIELDS = ("tool_id", "namespace", "description", "provenance", "inherited_from", "exposure")


def as_of_tables(one_tool: bool = False) -> str:
    """One CTE per history table, `<table>_at`: its versions as of $at (and $effective_at). `one_tool`: the
    tool table holds only the tool $tool (a tool key): a set computed from it is then that tool's rows of the
    set, exactly (each tool's row depends on that tool alone: effective_set.sql ranks and exposes per tool),
    at a fraction of the cost of every tool's (who can call a tool, why a subject sees it)."""
    def where(table: str) -> str:
        known = IN_EFFECT if table in BITEMPORAL_TABLES else AS_OF
        return f"{known} AND tool_key = $tool" if one_tool and table == "tool_history" else known
    return ",\n".join(f"{table}_at AS (SELECT * FROM {table} WHERE {where(table)})" for table in HISTORY_TABLES)
