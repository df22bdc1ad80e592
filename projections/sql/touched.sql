-- The current units $units with every unit below them, and the agents of all those units (kind, name).
WITH RECURSIVE tree AS (
    SELECT name FROM units WHERE name IN (SELECT unnest($units::VARCHAR[]))
    UNION SELECT u.name FROM units u JOIN tree t ON u.parent = t.name
)
SELECT 'unit', name FROM tree
UNION ALL
SELECT 'agent', name FROM agent_history WHERE valid_to IS NULL AND unit IN (SELECT name FROM tree)
