-- The rows of effective_tools that the grants in `_effective_deltas` (kind 'grant_added') change, for
-- the current sets only: for each subject at or below a grant's holder and each current tool the grant
-- covers, the grant's row where it beats the subject's row (effective_set.sql ranks explicit grants first,
-- the closest holder in the subject's chain first). Where the subject had a row for the tool, the exposure
-- stays (it depends on the subject and the tool alone); else it is worked out as effective_set.sql does.
-- Every row returned differs from the stored one.
WITH RECURSIVE added AS (
    SELECT DISTINCT holder_kind, holder, target, tool_key FROM _effective_deltas WHERE kind = 'grant_added'
),
below AS (  -- every current unit at or below each unit holder, with its distance to the holder
    SELECT u.name AS holder, u.name AS unit, 0 AS depth
    FROM unit_history u WHERE u.valid_to IS NULL AND u.name IN (SELECT holder FROM added WHERE holder_kind = 'unit')
    UNION ALL
    SELECT b.holder, u.name, b.depth + 1 FROM below b JOIN unit_history u ON u.parent = b.unit AND u.valid_to IS NULL
),
above AS (  -- every unit above each unit holder (its strict ancestors)
    SELECT u.name AS holder, u.parent AS unit
    FROM unit_history u WHERE u.valid_to IS NULL AND u.parent IS NOT NULL
     AND u.name IN (SELECT holder FROM added WHERE holder_kind = 'unit')
    UNION ALL
    SELECT a.holder, u.parent FROM above a JOIN unit_history u ON u.name = a.unit AND u.valid_to IS NULL
    WHERE u.parent IS NOT NULL
),
reached AS (  -- (holder, subject, depth of the holder in the subject's chain), as effective_set.sql counts it
    SELECT 'unit' AS holder_kind, holder, 'unit' AS kind, unit AS name, depth FROM below
    UNION ALL
    SELECT 'unit', b.holder, 'agent', ag.name, b.depth + 1
    FROM below b JOIN agent_history ag ON ag.unit = b.unit AND ag.valid_to IS NULL
    UNION ALL
    SELECT 'agent', ag.name, 'agent', ag.name, 0
    FROM agent_history ag WHERE ag.valid_to IS NULL AND ag.name IN (SELECT holder FROM added WHERE holder_kind = 'agent')
),
covered AS (  -- (holder, tool key) pairs the grants cover: by tool key, or by namespace prefix
    SELECT a.holder_kind, a.holder, t.tool_key
    FROM added a JOIN tool_history t ON t.valid_to IS NULL AND t.tool_key = a.tool_key
    UNION
    SELECT a.holder_kind, a.holder, t.tool_key
    FROM added a JOIN tool_history t ON t.valid_to IS NULL AND a.tool_key IS NULL
     AND t.namespace = split_part(a.target, '.', 1) AND starts_with(t.canonical_id, rtrim(a.target, '*'))
),
offered AS (  -- the closest new grant per (subject, tool)
    SELECT r.kind, r.name, c.tool_key, r.holder_kind, r.holder, r.depth
    FROM reached r JOIN covered c USING (holder_kind, holder)
    QUALIFY row_number() OVER (PARTITION BY r.kind, r.name, c.tool_key ORDER BY r.depth) = 1
),
allow AS (  -- allowlist entries of the agents offered a tool, pattern shims expanded (as effective_set.sql)
    SELECT l.agent, coalesce(sh.target, l.pattern) AS pattern
    FROM (SELECT agent, unnest(patterns) AS pattern FROM allowlist_history
          WHERE valid_to IS NULL AND agent IN (SELECT name FROM offered WHERE kind = 'agent')) l
    LEFT JOIN pattern_shims sh ON sh.pattern = l.pattern AND sh.valid_to IS NULL
),
current_tools AS (SELECT * FROM tool_history WHERE valid_to IS NULL),
current_aliases AS (SELECT * FROM alias_history WHERE valid_to IS NULL AND lifecycle <> 'retired'),
allowed AS (  -- (agent, tool) pairs an allowlist admits, through canonical IDs, aliases and shims
    SELECT a.agent, t.tool_key FROM allow a, current_tools t WHERE a.pattern = '*'
    UNION
    SELECT a.agent, t.tool_key FROM allow a JOIN current_tools t ON t.canonical_id = a.pattern
    UNION
    SELECT a.agent, t.tool_key FROM allow a JOIN current_tools t
      ON a.pattern LIKE '%.*' AND t.namespace = split_part(a.pattern, '.', 1)
     AND starts_with(t.canonical_id, rtrim(a.pattern, '*'))
    UNION
    SELECT a.agent, al.tool_key FROM allow a JOIN current_aliases al ON al.alias = a.pattern
    UNION
    SELECT a.agent, al.tool_key FROM allow a JOIN current_aliases al
      ON a.pattern LIKE '%.*' AND a.pattern <> '*'
     AND split_part(al.alias, '.', 1) = split_part(a.pattern, '.', 1) AND starts_with(al.alias, rtrim(a.pattern, '*'))
)
SELECT o.kind AS subject_kind, o.name AS subject, o.tool_key, t.canonical_id AS tool_id, t.namespace,
       t.description, 'explicit' AS provenance, CASE WHEN o.depth > 0 THEN o.holder END AS inherited_from,
       CASE WHEN e.tool_key IS NOT NULL THEN e.exposure  -- the same subject and tool: the same exposure
            WHEN o.kind = 'unit' THEN NULL
            WHEN NOT t.schema_valid THEN 'disabled_invalid_schema'
            WHEN t.requires_state AND ag.state_mode = 'stateless' THEN 'disabled_by_state_mode'
            WHEN al.agent IS NOT NULL AND ok.agent IS NULL THEN 'disabled_by_agent_allowlist'
            ELSE 'enabled' END AS exposure
FROM offered o JOIN tool_history t ON t.valid_to IS NULL AND t.tool_key = o.tool_key
LEFT JOIN effective_tools e ON e.subject_kind = o.kind AND e.subject = o.name AND e.tool_key = o.tool_key
LEFT JOIN agent_history ag ON o.kind = 'agent' AND ag.name = o.name AND ag.valid_to IS NULL
LEFT JOIN allowlist_history al ON o.kind = 'agent' AND al.agent = o.name AND al.valid_to IS NULL
LEFT JOIN allowed ok ON o.kind = 'agent' AND ok.agent = o.name AND ok.tool_key = o.tool_key
-- ARCH-21: runtime-only helpers are never model-facing.
WHERE o.tool_key NOT IN (SELECT tool_key FROM tools WHERE visibility = 'runtime_only')
  AND (e.tool_key IS NULL OR e.provenance <> 'explicit'
       -- an explicit row already there wins unless it comes from a unit above the new grant's holder
       OR o.holder_kind = 'agent' AND e.inherited_from IS NOT NULL
       OR o.holder_kind = 'unit' AND e.inherited_from IN (SELECT unit FROM above WHERE holder = o.holder))
