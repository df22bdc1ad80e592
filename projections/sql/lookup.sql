-- What the ID $id names: the tool whose canonical ID it is, or the tool it is an alias of.
SELECT $id AS input, t.canonical_id, t.tool_key, 'canonical' AS lifecycle, false AS shim
FROM tools t WHERE t.canonical_id = $id
UNION ALL
SELECT a.alias, t.canonical_id, t.tool_key, a.lifecycle, a.shim
FROM aliases a JOIN tools t USING (tool_key) WHERE a.alias = $id
