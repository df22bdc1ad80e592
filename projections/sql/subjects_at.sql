-- Every subject (kind, name) that exists as of position $at.
SELECT 'unit', name FROM unit_history WHERE {{as_of}}
UNION ALL
SELECT 'agent', name FROM agent_history WHERE {{as_of}}
ORDER BY 1, 2
