-- The current grant holders (kind, name) a tool with one of the canonical IDs $ids can reach: units a
-- connector covering it is bound to, and holders of an ns.* grant covering it.
SELECT 'unit', b.unit FROM binding_history b JOIN connector_history k ON k.slug = b.slug
WHERE b.valid_to IS NULL AND k.valid_to IS NULL
  AND EXISTS (SELECT 1 FROM unnest($ids::VARCHAR[]) AS x(id) WHERE starts_with(x.id, k.namespace || '.'))
UNION
SELECT g.subject_kind, g.subject FROM grant_history g
WHERE g.valid_to IS NULL AND g.tool_key IS NULL
  AND EXISTS (SELECT 1 FROM unnest($ids::VARCHAR[]) AS x(id) WHERE starts_with(x.id, rtrim(g.target, '*')))
