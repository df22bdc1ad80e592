-- The current units named in $units with every unit below them, and the agents of all those units:
-- (kind, name, position), position being the largest of $positions (paired with $units) that reaches it.
WITH RECURSIVE tree AS (
    SELECT u.name, t.position FROM units u
    JOIN (SELECT unnest($units::VARCHAR[]) AS name, unnest($positions::BIGINT[]) AS position) t ON t.name = u.name
    UNION SELECT u.name, t.position FROM units u JOIN tree t ON u.parent = t.name
)
SELECT 'unit', name, max(position) FROM tree GROUP BY name
UNION ALL
SELECT 'agent', a.name, max(t.position) FROM agent_history a JOIN tree t ON a.unit = t.name
WHERE a.valid_to IS NULL GROUP BY a.name
