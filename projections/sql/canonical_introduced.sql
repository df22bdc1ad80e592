-- The first release published after the canonical ID that alias $alias points to became canonical:
-- the release that introduced the replacement (the audit report checks no retirement happens in it).
SELECT r.version FROM releases r, tools t, aliases a
WHERE a.alias = $alias AND t.tool_key = a.tool_key AND r.position > t.canonical_position
ORDER BY r.seq LIMIT 1
