-- effective/fast_ways.py: for each way added or removed that was noted (the fragment `notes`, given_notes: a grant, a
-- binding), its holder and every current tool it covers (effective_set.sql's `granted` and connector join), is_way
-- true; a binding of a connector unknown here gives a NULL tool key. An allowlist set or cleared gives
-- its agent once, with an empty tool key and is_way false.
SELECT n.holder_kind, n.holder, t.tool_key, true AS is_way
FROM {{notes}} n JOIN tool_history t ON t.valid_to IS NULL AND t.tool_key = n.tool_key
WHERE n.kind IN ('grant_added', 'grant_revoked') AND n.tool_key IS NOT NULL
UNION ALL
SELECT n.holder_kind, n.holder, t.tool_key, true
FROM {{notes}} n JOIN tool_history t ON t.valid_to IS NULL AND t.namespace = split_part(n.target, '.', 1)
 AND starts_with(t.canonical_id, rtrim(n.target, '*'))
WHERE n.kind IN ('grant_added', 'grant_revoked') AND n.tool_key IS NULL
UNION ALL
SELECT n.holder_kind, n.holder, t.tool_key, true
FROM {{notes}} n
LEFT JOIN connector_history k ON k.slug = n.target AND k.valid_to IS NULL
LEFT JOIN tool_history t ON t.valid_to IS NULL AND t.namespace = split_part(k.namespace, '.', 1)
 AND starts_with(t.canonical_id, k.namespace || '.')
WHERE n.kind IN ('bound', 'unbound') AND (k.slug IS NULL OR t.tool_key IS NOT NULL)
UNION ALL
SELECT DISTINCT 'agent', n.holder, '', false FROM {{notes}} n WHERE n.kind = 'allowlist'
