-- The rule scopes that cover subject ($kind, $name) as of position $at: the subject itself, and every unit
-- of its chain (an agent's unit and that unit's ancestors; a unit and its ancestors).
WITH RECURSIVE u AS (SELECT * FROM unit_history WHERE {{as_of}}),
     ag AS (SELECT * FROM agent_history WHERE {{as_of}}),
     chain AS (
         SELECT name AS unit FROM u WHERE $kind = 'unit' AND name = $name
         UNION ALL
         SELECT unit FROM ag WHERE $kind = 'agent' AND name = $name
         UNION ALL
         SELECT u.parent FROM chain JOIN u ON u.name = chain.unit WHERE u.parent IS NOT NULL
     )
SELECT DISTINCT 'unit:' || unit AS scope FROM chain
UNION
SELECT 'agent:' || name FROM ag WHERE $kind = 'agent' AND name = $name
