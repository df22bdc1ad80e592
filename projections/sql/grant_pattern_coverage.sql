-- (holder kind, holder, tool key, canonical ID, namespace, description, schema_valid, requires_state) of every
-- current tool a noted grant of a namespace pattern (`ns.*`) covers (effective_set.sql's `granted`; the
-- fragment `notes`: effective/fast_ways.given_notes); internal and runtime-only tools are never model-facing (ARCH-21).
SELECT DISTINCT a.holder_kind, a.holder, t.tool_key, t.canonical_id, t.namespace, t.description, t.schema_valid,
       t.requires_state
FROM {{notes}} a JOIN tool_history t ON t.valid_to IS NULL AND t.namespace = split_part(a.target, '.', 1)
 AND starts_with(t.canonical_id, rtrim(a.target, '*'))
WHERE a.kind = 'grant_added' AND a.tool_key IS NULL
  AND t.tool_key NOT IN (SELECT tool_key FROM tools WHERE visibility <> 'public')
