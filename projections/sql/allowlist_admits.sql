-- (agent, tool key) pairs the current allowlists of the agents $agents admit among the tools $keys, through
-- canonical IDs, aliases and pattern shims (effective_set.sql's `allow` and `allowed`, for now).
WITH allow AS (
    SELECT l.agent, coalesce(sh.target, l.pattern) AS pattern
    FROM (SELECT agent, unnest(patterns) AS pattern FROM allowlist_history
          WHERE valid_to IS NULL AND agent IN (SELECT unnest($agents::VARCHAR[]))) l
    LEFT JOIN pattern_shims sh ON sh.pattern = l.pattern AND sh.valid_to IS NULL
),
candidates AS (SELECT * FROM tool_history WHERE valid_to IS NULL AND tool_key IN (SELECT unnest($keys::VARCHAR[]))),
aliases AS (SELECT * FROM alias_history WHERE valid_to IS NULL AND lifecycle <> 'retired'
            AND tool_key IN (SELECT unnest($keys::VARCHAR[])))
SELECT a.agent, t.tool_key FROM allow a, candidates t WHERE a.pattern = '*'
UNION
SELECT a.agent, t.tool_key FROM allow a JOIN candidates t ON t.canonical_id = a.pattern
UNION
SELECT a.agent, t.tool_key FROM allow a JOIN candidates t
  ON a.pattern LIKE '%.*' AND t.namespace = split_part(a.pattern, '.', 1) AND starts_with(t.canonical_id, rtrim(a.pattern, '*'))
UNION
SELECT a.agent, al.tool_key FROM allow a JOIN aliases al ON al.alias = a.pattern
UNION
SELECT a.agent, al.tool_key FROM allow a JOIN aliases al
  ON a.pattern LIKE '%.*' AND a.pattern <> '*'
 AND split_part(al.alias, '.', 1) = split_part(a.pattern, '.', 1) AND starts_with(al.alias, rtrim(a.pattern, '*'))
