-- effective_history at scale (issue 29): one tool's or one subject's share of the view, in well under a
-- second at 200,000 events, with the view's columns and rows (numbered after 181: the images units run,
-- the two parts marked 181, need its table, which DuckDB checks when a macro is created):
--
--   effective_history_of_tool(ID)       every subject's versions of the tool(s) ID named at some time
--                                       (a canonical ID or an alias), under whatever ID each version had
--   effective_history_of_subject(S)     one subject's versions, the subject written `unit:NAME`/`agent:NAME`
--   effective_history_for(KIND, NAME, ID)  both at once (NULL matches any); the two above call it
--                                       (named to sort before them: EXPORT DATABASE writes macros in name
--                                       order, and a macro must exist before one that calls it)
--
-- Computed, not stored (the decision, measured in docs/performance.md): stored, the history is the largest
-- table of the read model (7.6 million rows at 200,000 events of `toolcat workload`) and writing it takes
-- longer than the rest of a rebuild, whose budget (1,000,000 events in 60 s) has no room for it. Every
-- (subject, tool) row's history depends only on that subject's context and that tool's rows, so a question
-- about one tool or one subject needs only their share.
--
-- The rules are migration 093's, read there; only the ways the share is cut into segments, ranked and packed
-- differ. 093 does these with window functions, which suit the whole view (a sort of millions of rows) but
-- not a share: DuckDB sizes a window's (and an ASOF join's) partitions from the estimated row count, and the
-- interval joins make those estimates absurd (10^9 rows for 3,500), so each of 093's five windows cost
-- ≈ 0.4 s for one subject's few thousand rows. Here hash aggregates and list functions give the same rows at
-- a cost that follows the real count: the segments come from each row's sorted list of points, the winning
-- way is the least (rank, depth, provenance) of a segment, a row has two ways at once when it has more
-- overlapping pairs than ways, and packing walks each row's sorted list of versions. The view and
-- effective_history_of(KIND, NAME) stay 093's; the tests hold the shares equal to the view, row for row.
CREATE OR REPLACE MACRO effective_history_for(of_kind, of_subject, of_tool) AS TABLE
    WITH RECURSIVE tool_history_w AS (  -- the tools asked about: every tool, or the ones of_tool ever named
        SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM tool_history
        WHERE of_tool IS NULL OR tool_key IN (SELECT tool_key FROM tool_history WHERE canonical_id = of_tool
                                              UNION SELECT tool_key FROM alias_history WHERE alias = of_tool)),
    alias_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM alias_history),
    platform_namespaces_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM platform_namespaces),
    pattern_shims_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM pattern_shims),
    unit_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM unit_history),
    agent_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM agent_history),
    allowlist_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM allowlist_history),
    image_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM image_history),
    unit_image_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM unit_image_history),  -- 181
    connector_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM connector_history),
    binding_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM binding_history),
    grant_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM grant_history),
    _subjects AS (  -- the subjects asked about: one, every subject of a kind, or all (NULL matches any)
        SELECT kind, name FROM (SELECT DISTINCT 'unit' AS kind, name FROM unit_history
                                UNION ALL SELECT DISTINCT 'agent', name FROM agent_history)
        WHERE (of_kind IS NULL OR kind = of_kind) AND (of_subject IS NULL OR name = of_subject)
    ),
    roots AS (
        SELECT s.kind, s.name, s.name AS unit, 0 AS depth, u.lo, u.hi
        FROM _subjects s JOIN unit_history_w u ON s.kind = 'unit' AND u.name = s.name
        UNION ALL
        SELECT s.kind, s.name, a.unit, 1, a.lo, a.hi
        FROM _subjects s JOIN agent_history_w a ON s.kind = 'agent' AND a.name = s.name
    ),
    chain AS (  -- the subject's own unit and every ancestor, with the distance to it, over time
        SELECT * FROM roots
        UNION ALL
        SELECT c.kind, c.name, u.parent, c.depth + 1, greatest(c.lo, u.lo), least(c.hi, u.hi)
        FROM chain c JOIN unit_history_w u ON u.name = c.unit AND u.lo < c.hi AND c.lo < u.hi
        WHERE u.parent IS NOT NULL
    ),
    wanted AS (
        SELECT DISTINCT 'agent' AS kind, name FROM _subjects WHERE kind = 'agent'
        UNION SELECT DISTINCT 'unit', unit FROM chain
    ),
    grant_rows AS (
        SELECT g.* FROM grant_history_w g JOIN wanted w ON g.subject_kind = w.kind AND g.subject = w.name
    ),
    granted AS (
        SELECT g.subject_kind, g.subject, t.tool_key, greatest(g.lo, t.lo) AS lo, least(g.hi, t.hi) AS hi
        FROM grant_rows g JOIN tool_history_w t ON t.tool_key = g.tool_key AND g.lo < t.hi AND t.lo < g.hi
        UNION ALL
        SELECT g.subject_kind, g.subject, t.tool_key, greatest(g.lo, t.lo), least(g.hi, t.hi)
        FROM grant_rows g JOIN tool_history_w t
          ON g.tool_key IS NULL AND t.namespace = split_part(g.target, '.', 1)
         AND starts_with(t.canonical_id, rtrim(g.target, '*')) AND g.lo < t.hi AND t.lo < g.hi
    ),
    existing AS (  -- when each subject exists
        SELECT s.kind, s.name, e.lo, e.hi FROM _subjects s
        JOIN (SELECT 'unit' AS kind, name, lo, hi FROM unit_history_w
              UNION ALL SELECT 'agent', name, lo, hi FROM agent_history_w) e ON e.kind = s.kind AND e.name = s.name
    ),
    ways AS (  -- every way a subject is granted a tool (effective_set.sql's candidates), with its interval
        SELECT s.kind, s.name, g.tool_key, 1 AS rank, 'explicit' AS provenance, NULL::VARCHAR AS inherited_from,
               0 AS depth, g.lo, g.hi
        FROM _subjects s JOIN granted g ON s.kind = 'agent' AND g.subject_kind = 'agent' AND g.subject = s.name
        UNION ALL
        SELECT c.kind, c.name, g.tool_key, 1, 'explicit', CASE WHEN c.depth > 0 THEN c.unit END, c.depth,
               greatest(c.lo, g.lo), least(c.hi, g.hi)
        FROM chain c JOIN granted g ON g.subject_kind = 'unit' AND g.subject = c.unit AND c.lo < g.hi AND g.lo < c.hi
        UNION ALL
        SELECT c.kind, c.name, t.tool_key, 2, 'connector:' || b.slug, CASE WHEN c.depth > 0 THEN c.unit END, c.depth,
               greatest(c.lo, b.lo, k.lo, t.lo), least(c.hi, b.hi, k.hi, t.hi)
        FROM chain c JOIN binding_history_w b ON b.unit = c.unit AND c.lo < b.hi AND b.lo < c.hi
        JOIN connector_history_w k ON k.slug = b.slug AND k.lo < least(c.hi, b.hi) AND greatest(c.lo, b.lo) < k.hi
        JOIN tool_history_w t ON t.namespace = split_part(k.namespace, '.', 1)
         AND starts_with(t.canonical_id, k.namespace || '.')
         AND t.lo < least(c.hi, b.hi, k.hi) AND greatest(c.lo, b.lo, k.lo) < t.hi
        UNION ALL
        SELECT e.kind, e.name, t.tool_key, 3, 'platform', NULL, 0, greatest(e.lo, p.lo, t.lo), least(e.hi, p.hi, t.hi)
        FROM existing e JOIN platform_namespaces_w p ON p.lo < e.hi AND e.lo < p.hi
        JOIN tool_history_w t ON t.namespace = p.namespace AND t.lo < least(e.hi, p.hi) AND greatest(e.lo, p.lo) < t.hi
        UNION ALL
        SELECT s.kind, s.name, i.tool_key, 4, 'image', NULL, 0, greatest(i.lo, t.lo), least(i.hi, t.hi)
        FROM _subjects s
        JOIN (SELECT agent, lo, hi, unnest(tool_keys) AS tool_key FROM image_history_w) i
          ON s.kind = 'agent' AND i.agent = s.name
        JOIN tool_history_w t ON t.tool_key = i.tool_key AND i.lo < t.hi AND t.lo < i.hi
        UNION ALL  -- 181: the image a unit runs, the unit's own (never inherited)
        SELECT s.kind, s.name, i.tool_key, 4, 'image', NULL, 0, greatest(i.lo, t.lo), least(i.hi, t.hi)
        FROM _subjects s
        JOIN (SELECT unit, lo, hi, unnest(tool_keys) AS tool_key FROM unit_image_history_w) i
          ON s.kind = 'unit' AND i.unit = s.name
        JOIN tool_history_w t ON t.tool_key = i.tool_key AND i.lo < t.hi AND t.lo < i.hi
    ),
    candidates AS (  -- ARCH-21: runtime-only helpers are never model-facing (a tool's visibility never changes)
        SELECT * FROM ways WHERE lo < hi
          AND tool_key NOT IN (SELECT tool_key FROM tools WHERE visibility = 'runtime_only')
    ),
    pairs AS (SELECT DISTINCT name AS agent, tool_key FROM candidates WHERE kind = 'agent'),
    allowlist_entries AS (
        SELECT agent, lo, hi, unnest(patterns) AS pattern FROM allowlist_history_w
        WHERE agent IN (SELECT name FROM _subjects WHERE kind = 'agent')
    ),
    listed AS (  -- allowlist entries of the agents asked about, cut where a pattern shim of theirs comes or goes
        SELECT agent, pattern, cut AS lo,
               coalesce(lead(cut) OVER (PARTITION BY agent, pattern, row_lo ORDER BY cut), row_hi) AS hi
        FROM (SELECT l.agent, l.pattern, l.lo AS row_lo, l.hi AS row_hi, l.lo AS cut FROM allowlist_entries l
              UNION
              SELECT l.agent, l.pattern, l.lo, l.hi, x.cut FROM allowlist_entries l
              JOIN (SELECT pattern, lo AS cut FROM pattern_shims_w UNION SELECT pattern, hi FROM pattern_shims_w) x
                ON x.pattern = l.pattern AND l.lo < x.cut AND x.cut < l.hi)
    ),
    allow AS (  -- pattern shims expanded, as of the start of each piece
        SELECT l.agent, coalesce(sh.target, l.pattern) AS pattern, l.lo, l.hi
        FROM listed l LEFT JOIN pattern_shims_w sh ON sh.pattern = l.pattern AND sh.lo <= l.lo AND l.lo < sh.hi
    ),
    allowed AS (  -- when an allowlist admits a (agent, tool) pair of the candidates
        SELECT a.agent, t.tool_key, greatest(a.lo, t.lo) AS lo, least(a.hi, t.hi) AS hi
        FROM allow a JOIN pairs q ON q.agent = a.agent JOIN tool_history_w t ON t.tool_key = q.tool_key
         AND a.lo < t.hi AND t.lo < a.hi
        WHERE a.pattern = '*' OR t.canonical_id = a.pattern
           OR a.pattern LIKE '%.*' AND t.namespace = split_part(a.pattern, '.', 1)
          AND starts_with(t.canonical_id, rtrim(a.pattern, '*'))
        UNION ALL
        SELECT a.agent, al.tool_key, greatest(a.lo, al.lo), least(a.hi, al.hi)
        FROM allow a JOIN alias_history_w al ON al.lifecycle <> 'retired' AND a.lo < al.hi AND al.lo < a.hi
         AND (al.alias = a.pattern
              OR a.pattern LIKE '%.*' AND a.pattern <> '*' AND split_part(al.alias, '.', 1) = split_part(a.pattern, '.', 1)
             AND starts_with(al.alias, rtrim(a.pattern, '*')))
        JOIN pairs q ON q.agent = a.agent AND q.tool_key = al.tool_key
    ),
    overlapping AS (  -- (subject, tool) rows granted two ways at once somewhere: ranked segment by segment.
        -- Each way overlaps itself; a row has two ways at once when it has more overlapping pairs than ways.
        SELECT kind, name, tool_key FROM (
            SELECT a.kind, a.name, a.tool_key, count(*) AS pairs FROM candidates a JOIN candidates b
              ON b.kind = a.kind AND b.name = a.name AND b.tool_key = a.tool_key AND a.lo < b.hi AND b.lo < a.hi
            GROUP BY ALL)
        JOIN (SELECT kind, name, tool_key, count(*) AS ways FROM candidates GROUP BY ALL) USING (kind, name, tool_key)
        WHERE pairs > ways
    ),
    agent_points AS (  -- where an agent's exposure may change: its versions and its allowlist's
        SELECT name AS agent, lo AS p FROM agent_history_w UNION SELECT name, hi FROM agent_history_w
        UNION SELECT agent, lo FROM allowlist_history_w UNION SELECT agent, hi FROM allowlist_history_w
    ),
    split AS (  -- the rows that need segments; every other way is a version on its own (the common case)
        SELECT * FROM overlapping
        UNION
        SELECT c.kind, c.name, c.tool_key FROM candidates c JOIN agent_points x
          ON c.kind = 'agent' AND x.agent = c.name AND c.lo < x.p AND x.p < c.hi
        UNION
        SELECT c.kind, c.name, c.tool_key FROM candidates c JOIN allowed a
          ON c.kind = 'agent' AND a.agent = c.name AND a.tool_key = c.tool_key
         AND (c.lo < a.lo AND a.lo < c.hi OR c.lo < a.hi AND a.hi < c.hi)
    ),
    points AS (  -- every position where what decides such a row may change
        SELECT c.kind, c.name, c.tool_key, unnest([c.lo, c.hi]) AS p
        FROM candidates c SEMI JOIN split USING (kind, name, tool_key)
        UNION
        SELECT s.kind, s.name, s.tool_key, x.p FROM split s JOIN agent_points x ON s.kind = 'agent' AND x.agent = s.name
        UNION
        SELECT s.kind, s.name, s.tool_key, unnest([a.lo, a.hi]) FROM split s JOIN allowed a
          ON s.kind = 'agent' AND a.agent = s.name AND a.tool_key = s.tool_key
    ),
    segments AS (  -- the pieces between consecutive points
        SELECT kind, name, tool_key, ps[i] AS lo, ps[i + 1] AS hi
        FROM (SELECT *, unnest(range(1, len(ps))) AS i
              FROM (SELECT kind, name, tool_key, list(p ORDER BY p) AS ps FROM points GROUP BY ALL))
    ),
    ranked AS (  -- the winning way over each segment, ranked as effective_set.sql ranks them
        SELECT kind, name, tool_key, lo, hi, w.provenance, w.inherited_from FROM (
            SELECT s.kind, s.name, s.tool_key, s.lo, s.hi,
                   min(struct_pack(rank := c.rank, depth := c.depth, provenance := c.provenance,
                                   inherited_from := c.inherited_from)) AS w
            FROM segments s JOIN candidates c ON c.kind = s.kind AND c.name = s.name AND c.tool_key = s.tool_key
             AND c.lo <= s.lo AND s.lo < c.hi
            GROUP BY ALL)
        UNION ALL
        SELECT c.kind, c.name, c.tool_key, c.lo, c.hi, c.provenance, c.inherited_from
        FROM candidates c ANTI JOIN split USING (kind, name, tool_key)
    ),
    admitted AS (
        SELECT DISTINCT r.name, r.tool_key, r.lo FROM ranked r
        JOIN allowed ok ON r.kind = 'agent' AND ok.agent = r.name AND ok.tool_key = r.tool_key
         AND ok.lo <= r.lo AND r.lo < ok.hi
    ),
    described AS (
        SELECT r.kind AS subject_kind, r.name AS subject, r.tool_key, r.lo, r.hi,
               struct_pack(tool_id := t.canonical_id, namespace := t.namespace, description := t.description,
                           provenance := r.provenance, inherited_from := r.inherited_from,
                           exposure := CASE WHEN r.kind = 'unit' THEN NULL
                                            WHEN NOT t.schema_valid THEN 'disabled_invalid_schema'
                                            WHEN t.requires_state AND ag.state_mode = 'stateless'
                                                 THEN 'disabled_by_state_mode'
                                            WHEN al.agent IS NOT NULL AND ok.name IS NULL THEN 'disabled_by_agent_allowlist'
                                            ELSE 'enabled' END) AS v
        FROM ranked r JOIN tool_history_w t ON t.tool_key = r.tool_key AND t.lo <= r.lo AND r.lo < t.hi
        LEFT JOIN agent_history_w ag ON r.kind = 'agent' AND ag.name = r.name AND ag.lo <= r.lo AND r.lo < ag.hi
        LEFT JOIN allowlist_history_w al ON r.kind = 'agent' AND al.agent = r.name AND al.lo <= r.lo AND r.lo < al.hi
        LEFT JOIN admitted ok ON r.kind = 'agent' AND ok.name = r.name AND ok.tool_key = r.tool_key AND ok.lo = r.lo
    ),
    runs AS (  -- packing: each row's versions in order
        SELECT subject_kind, subject, tool_key, list(struct_pack(lo := lo, hi := hi, v := v) ORDER BY lo) AS r
        FROM described GROUP BY ALL
    ),
    starts AS (  -- where a version starts: where the previous one does not end, or differs
        SELECT *, list_filter(range(1, len(r) + 1),
                              lambda i: i = 1 OR r[i - 1].hi <> r[i].lo OR r[i - 1].v IS DISTINCT FROM r[i].v) AS s
        FROM runs
    ),
    versions AS (
        SELECT subject_kind, subject, tool_key, r[s[j]].v AS v, r[s[j]].lo AS valid_from,
               r[coalesce(s[j + 1], len(r) + 1) - 1].hi AS valid_to
        FROM (SELECT *, unnest(range(1, len(s) + 1)) AS j FROM starts)
    )
    SELECT x.subject_kind, x.subject, x.tool_key, x.v.tool_id, x.v.namespace, x.v.description, x.v.provenance,
           x.v.inherited_from, x.v.exposure, x.valid_from, nullif(x.valid_to, 4611686018427387904) AS valid_to,
           f.recorded_at AS valid_from_time, e.recorded_at AS valid_to_time
    FROM versions x
    LEFT JOIN events f ON f.position = x.valid_from
    LEFT JOIN events e ON e.position = x.valid_to;

CREATE OR REPLACE MACRO effective_history_of_subject(of_subject) AS TABLE
    SELECT * FROM effective_history_for(split_part(of_subject, ':', 1), split_part(of_subject, ':', 2), NULL);

CREATE OR REPLACE MACRO effective_history_of_tool(of_tool) AS TABLE
    SELECT * FROM effective_history_for(NULL, NULL, of_tool);
