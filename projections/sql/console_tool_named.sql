-- The tool the ID $id names: by its canonical ID, or by any of its aliases, retired ones too (an old link
-- still leads to the tool).
SELECT tool_key, canonical_id FROM tools WHERE canonical_id = $id
UNION ALL
SELECT t.tool_key, t.canonical_id FROM aliases a JOIN tools t USING (tool_key) WHERE a.alias = $id
