-- effective/fast_ways.py: the current tools that can be in a set (internal and runtime-only tools never are, ARCH-21),
-- those the fragment `which` chooses (fast_ways.way_tools: those of $keys, or all), with whether
-- a platform namespace grants them to everyone (effective_set.sql's rank 3).
SELECT t.tool_key, t.canonical_id, t.namespace, t.description, t.schema_valid, t.requires_state,
       t.namespace IN (SELECT namespace FROM platform_namespaces WHERE valid_to IS NULL) AS platform
FROM tool_history t
WHERE t.valid_to IS NULL AND {{which}}
  AND t.tool_key NOT IN (SELECT tool_key FROM tools WHERE visibility <> 'public')
