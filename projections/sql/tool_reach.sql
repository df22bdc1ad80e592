-- The current grant holders (kind, name, id) a tool with one of the canonical IDs $ids can reach: units a
-- connector covering it is bound to, and holders of an ns.* grant covering it.
SELECT 'unit', b.unit, x.id FROM binding_history b JOIN connector_history k ON k.slug = b.slug
JOIN unnest($ids::VARCHAR[]) AS x(id) ON starts_with(x.id, k.namespace || '.')
WHERE b.valid_to IS NULL AND k.valid_to IS NULL
UNION
SELECT g.subject_kind, g.subject, x.id FROM grant_history g
JOIN unnest($ids::VARCHAR[]) AS x(id) ON starts_with(x.id, rtrim(g.target, '*'))
WHERE g.valid_to IS NULL AND g.tool_key IS NULL
