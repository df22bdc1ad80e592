-- effective/fast_ways.py: the current agents $names with their unit, state mode, whether they have an
-- allowlist, and the tool keys their image declares (NULL: none).
SELECT a.name, a.unit, a.state_mode, l.agent IS NOT NULL, i.tool_keys
FROM agent_history a
LEFT JOIN allowlist_history l ON l.agent = a.name AND l.valid_to IS NULL
LEFT JOIN image_history i ON i.agent = a.name AND i.valid_to IS NULL
WHERE a.valid_to IS NULL AND a.name = ANY($names::VARCHAR[])
