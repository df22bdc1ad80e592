-- The effective tool set, for now and for any past position: the CTEs only, ending in
--   described: every way each subject asked about is granted each tool, ranked (`place` 1 wins);
--   winners:   the set itself, in the columns of effective_tools.
-- Every source is read through its history table as of position $at (and, for grants and bindings,
-- time $effective_at), so the same text answers the current set and as-of questions. The subjects asked
-- about come from a table `_subjects` (kind, name) registered by the caller.
WITH RECURSIVE {{as_of_tables}},
roots AS (
    SELECT s.kind, s.name, s.name AS unit, 0 AS depth
    FROM _subjects s JOIN unit_history_at u ON s.kind = 'unit' AND u.name = s.name
    UNION ALL
    SELECT s.kind, s.name, a.unit, 1 FROM _subjects s JOIN agent_history_at a ON s.kind = 'agent' AND a.name = s.name
),
chain AS (  -- the subject's own unit (for a unit: itself) and every ancestor, with the distance to it
    SELECT * FROM roots
    UNION ALL
    SELECT c.kind, c.name, u.parent, c.depth + 1
    FROM chain c JOIN unit_history_at u ON u.name = c.unit WHERE u.parent IS NOT NULL
),
grant_rows AS (  -- the grants that matter: the subjects' own and those of every unit in their chains
    -- (semi-joins, not a join with the DISTINCT union of holders: DuckDB sized that aggregate from the
    -- recursive chain's estimate, ≈ 10 ms of a one-subject set's ≈ 35 ms of execution for 4 rows)
    SELECT g.* FROM grant_history_at g
    WHERE g.subject_kind = 'agent' AND g.subject IN (SELECT name FROM _subjects WHERE kind = 'agent')
       OR g.subject_kind = 'unit' AND g.subject IN (SELECT unit FROM chain)
),
granted AS (  -- every (grant holder, tool) pair a grant covers: by tool key, or by namespace prefix
    SELECT g.subject_kind, g.subject, g.target, g.valid_from AS position, g.tool_key
    FROM grant_rows g JOIN tool_history_at t ON t.tool_key = g.tool_key
    UNION ALL
    SELECT g.subject_kind, g.subject, g.target, g.valid_from, t.tool_key
    FROM grant_rows g JOIN tool_history_at t
      ON g.tool_key IS NULL AND t.namespace = split_part(g.target, '.', 1)
     AND starts_with(t.canonical_id, rtrim(g.target, '*'))
),
candidates AS (
    SELECT s.kind, s.name, g.tool_key, 1 AS rank, 'explicit' AS provenance, NULL AS inherited_from,
           0 AS depth, g.position, 'grant ' || g.target || ' on agent:' || s.name AS cause
    FROM _subjects s JOIN granted g ON s.kind = 'agent' AND g.subject_kind = 'agent' AND g.subject = s.name
    UNION ALL
    SELECT c.kind, c.name, g.tool_key, 1, 'explicit', CASE WHEN c.depth > 0 THEN c.unit END,
           c.depth, g.position, 'grant ' || g.target || ' on unit:' || c.unit
    FROM chain c JOIN granted g ON g.subject_kind = 'unit' AND g.subject = c.unit
    UNION ALL
    SELECT c.kind, c.name, t.tool_key, 2, 'connector:' || b.slug, CASE WHEN c.depth > 0 THEN c.unit END,
           c.depth, b.valid_from, 'connector ' || b.slug || ' bound to unit:' || c.unit
    FROM chain c JOIN binding_history_at b ON b.unit = c.unit
    JOIN connector_history_at k ON k.slug = b.slug
    JOIN tool_history_at t ON t.namespace = split_part(k.namespace, '.', 1)
     AND starts_with(t.canonical_id, k.namespace || '.')
    UNION ALL
    SELECT s.kind, s.name, t.tool_key, 3, 'platform', NULL, 0, t.valid_from, 'platform namespace ' || t.namespace
    FROM _subjects s JOIN tool_history_at t ON t.namespace IN (SELECT namespace FROM platform_namespaces_at)
    WHERE s.kind = 'unit' AND s.name IN (SELECT name FROM unit_history_at)
       OR s.kind = 'agent' AND s.name IN (SELECT name FROM agent_history_at)
    UNION ALL
    SELECT s.kind, s.name, i.tool_key, 4, 'image', NULL, 0, i.valid_from, 'image ' || i.image
    FROM _subjects s
    JOIN (SELECT agent, image, valid_from, unnest(tool_keys) AS tool_key FROM image_history_at) i
      ON s.kind = 'agent' AND i.agent = s.name
    JOIN tool_history_at t ON t.tool_key = i.tool_key
    UNION ALL  -- the image a unit runs: the unit's own tools, never inherited by its agents or sub-units
    SELECT s.kind, s.name, i.tool_key, 4, 'image', NULL, 0, i.valid_from, 'image ' || i.image
    FROM _subjects s
    JOIN (SELECT unit, image, valid_from, unnest(tool_keys) AS tool_key FROM unit_image_history_at) i
      ON s.kind = 'unit' AND i.unit = s.name
    JOIN tool_history_at t ON t.tool_key = i.tool_key
),
allow AS (  -- allowlist entries of the agents asked about, pattern shims expanded
    SELECT l.agent, coalesce(sh.target, l.pattern) AS pattern
    FROM (SELECT agent, unnest(patterns) AS pattern FROM allowlist_history_at
          WHERE agent IN (SELECT name FROM _subjects WHERE kind = 'agent')) l
    LEFT JOIN pattern_shims_at sh ON sh.pattern = l.pattern
),
allowed AS (  -- (agent, tool) pairs an allowlist admits, through canonical IDs, aliases and shims
    SELECT a.agent, t.tool_key FROM allow a, tool_history_at t WHERE a.pattern = '*'
    UNION
    SELECT a.agent, t.tool_key FROM allow a JOIN tool_history_at t ON t.canonical_id = a.pattern
    UNION
    SELECT a.agent, t.tool_key FROM allow a JOIN tool_history_at t
      ON a.pattern LIKE '%.*' AND t.namespace = split_part(a.pattern, '.', 1)
     AND starts_with(t.canonical_id, rtrim(a.pattern, '*'))
    UNION
    SELECT a.agent, al.tool_key FROM allow a JOIN alias_history_at al
      ON al.lifecycle <> 'retired' AND al.alias = a.pattern
    UNION
    SELECT a.agent, al.tool_key FROM allow a JOIN alias_history_at al
      ON al.lifecycle <> 'retired' AND a.pattern LIKE '%.*' AND a.pattern <> '*'
     AND split_part(al.alias, '.', 1) = split_part(a.pattern, '.', 1) AND starts_with(al.alias, rtrim(a.pattern, '*'))
),
contested AS MATERIALIZED (  -- the (subject, tool) pairs granted more than one way: the few ranked
    SELECT kind, name, tool_key FROM candidates GROUP BY ALL HAVING count(*) > 1
),
ranked AS (  -- a pair granted one way has that way in place 1: a window over every candidate (≈ 3.1M rows
    -- at a million events, all but ≈ 900 pairs granted one way) was most of a full refresh's cost
    SELECT *, 1::BIGINT AS place FROM candidates ANTI JOIN contested USING (kind, name, tool_key)
    UNION ALL
    SELECT *, row_number() OVER (PARTITION BY kind, name, tool_key
                                 ORDER BY rank, depth, provenance, position) AS place
    FROM candidates SEMI JOIN contested USING (kind, name, tool_key)
),
described AS (
    SELECT r.*, t.canonical_id AS tool_id, t.namespace, t.description,
           CASE WHEN r.kind = 'unit' THEN NULL
                WHEN NOT t.schema_valid THEN 'disabled_invalid_schema'
                WHEN t.requires_state AND ag.state_mode = 'stateless' THEN 'disabled_by_state_mode'
                WHEN al.agent IS NOT NULL AND ok.agent IS NULL THEN 'disabled_by_agent_allowlist'
                ELSE 'enabled' END AS exposure,
           CASE WHEN r.kind = 'unit' THEN NULL  -- the event behind a disabled exposure, for explain
                WHEN NOT t.schema_valid THEN t.valid_from
                WHEN t.requires_state AND ag.state_mode = 'stateless' THEN ag.valid_from
                WHEN al.agent IS NOT NULL AND ok.agent IS NULL THEN al.valid_from END AS exposure_position
    FROM ranked r JOIN tool_history_at t USING (tool_key)
    LEFT JOIN agent_history_at ag ON r.kind = 'agent' AND ag.name = r.name
    LEFT JOIN allowlist_history_at al ON r.kind = 'agent' AND al.agent = r.name
    LEFT JOIN allowed ok ON r.kind = 'agent' AND ok.agent = r.name AND ok.tool_key = r.tool_key
    -- ARCH-21: internal and runtime-only tools are never model-facing (a tool's visibility never changes).
    WHERE r.tool_key NOT IN (SELECT tool_key FROM tools WHERE visibility <> 'public')
),
winners AS (
    SELECT kind AS subject_kind, name AS subject, tool_key, {{effective_fields}} FROM described WHERE place = 1
)
