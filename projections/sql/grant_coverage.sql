-- (holder kind, holder, tool key, canonical ID, namespace, description, schema_valid, requires_state) of
-- every current tool a grant of a tool noted covers (the fragment `notes`: effective_ways.given_notes; $keys:
-- the keys they name, so the scan keeps only those); runtime-only helpers are never model-facing (ARCH-21).
SELECT DISTINCT a.holder_kind, a.holder, t.tool_key, t.canonical_id, t.namespace, t.description, t.schema_valid,
       t.requires_state
FROM {{notes}} a JOIN tool_history t ON t.tool_key = a.tool_key AND t.valid_to IS NULL
WHERE a.kind = 'grant_added' AND t.tool_key = ANY($keys::VARCHAR[])
  AND t.tool_key NOT IN (SELECT tool_key FROM tools WHERE visibility = 'runtime_only' AND tool_key = ANY($keys::VARCHAR[]))
