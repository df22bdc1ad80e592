-- One subject's effective history, by a narrower query than effective_history_for (183) (issue 32: the
-- console's changes of a subject, ≤ 100 ms a page on the 1,000-agent bench catalog):
--
--   effective_history_for_subject(KIND, NAME)  one subject's versions, the view's columns and rows
--   effective_history_of_subject(S)            the same, the subject written `unit:NAME`/`agent:NAME`
--                                              (183's, now calling the one above; named to sort after it:
--                                              EXPORT DATABASE writes macros in name order)
--
-- The rules are migration 093's, read there. What differs is only that the subject is one and known:
-- every source is cut to the subject's own rows where it is read (its versions, grants, images,
-- allowlist), no column carries the subject, and every (subject, tool) row is cut at each point where what
-- decides it may change (its ways' ends, the agent's versions and its allowlist's, where an allowlist starts
-- or stops admitting the tool) and ranked segment by segment, instead of first telling apart the rows that
-- need it (093's `overlapping` and `split`: a self-join and three aggregates). The extra cuts fall inside a
-- version whose answer does not change there, and packing joins the pieces again, so the versions are
-- 093's. Measured on the bench catalog (1,000 agents × 10,020 tools, a typical agent's 1,320 versions,
-- threads=1, callgrind): 179 operators instead of 281, 264 M instructions a query instead of 436 M.
CREATE OR REPLACE MACRO effective_history_for_subject(of_kind, of_subject) AS TABLE
    -- (093's `<table>_w`: every history row as [lo, hi), hi = 2^62 while current; the subject's own rows only
    -- where the table is about subjects)
    WITH RECURSIVE tool_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM tool_history),
    alias_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM alias_history),
    platform_namespaces_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM platform_namespaces),
    pattern_shims_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM pattern_shims),
    unit_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM unit_history),
    agent_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM agent_history
                        WHERE of_kind = 'agent' AND name = of_subject),
    allowlist_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM allowlist_history
                            WHERE of_kind = 'agent' AND agent = of_subject),
    connector_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM connector_history),
    binding_history_w AS (SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM binding_history),
    roots AS (  -- the subject's own versions: when it exists, and the unit it is in (a unit: itself)
        SELECT name AS unit, 0 AS depth, lo, hi FROM unit_history_w WHERE of_kind = 'unit' AND name = of_subject
        UNION ALL
        SELECT unit, 1, lo, hi FROM agent_history_w
    ),
    chain AS (  -- that unit and every ancestor, with the distance to it, over time
        SELECT * FROM roots
        UNION ALL
        SELECT u.parent, c.depth + 1, greatest(c.lo, u.lo), least(c.hi, u.hi)
        FROM chain c JOIN unit_history_w u ON u.name = c.unit AND u.lo < c.hi AND c.lo < u.hi
        WHERE u.parent IS NOT NULL
    ),
    grant_rows AS (  -- the subject's own grants and those of every unit of its chain
        SELECT *, valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi FROM grant_history
        WHERE subject_kind = 'agent' AND of_kind = 'agent' AND subject = of_subject
           OR subject_kind = 'unit' AND subject IN (SELECT unit FROM chain)
    ),
    granted AS (  -- every (grant holder, tool) pair a grant covers, and when
        SELECT g.subject_kind, g.subject, t.tool_key, greatest(g.lo, t.lo) AS lo, least(g.hi, t.hi) AS hi
        FROM grant_rows g JOIN tool_history_w t ON t.tool_key = g.tool_key AND g.lo < t.hi AND t.lo < g.hi
        UNION ALL
        SELECT g.subject_kind, g.subject, t.tool_key, greatest(g.lo, t.lo), least(g.hi, t.hi)
        FROM grant_rows g JOIN tool_history_w t
          ON g.tool_key IS NULL AND t.namespace = split_part(g.target, '.', 1)
         AND starts_with(t.canonical_id, rtrim(g.target, '*')) AND g.lo < t.hi AND t.lo < g.hi
    ),
    ways AS (  -- every way the subject is granted a tool (effective_set.sql's candidates), with its interval
        SELECT tool_key, 1 AS rank, 'explicit' AS provenance, NULL::VARCHAR AS inherited_from, 0 AS depth, lo, hi
        FROM granted WHERE subject_kind = 'agent'
        UNION ALL
        SELECT g.tool_key, 1, 'explicit', CASE WHEN c.depth > 0 THEN c.unit END, c.depth,
               greatest(c.lo, g.lo), least(c.hi, g.hi)
        FROM chain c JOIN granted g ON g.subject_kind = 'unit' AND g.subject = c.unit AND c.lo < g.hi AND g.lo < c.hi
        UNION ALL
        SELECT t.tool_key, 2, 'connector:' || b.slug, CASE WHEN c.depth > 0 THEN c.unit END, c.depth,
               greatest(c.lo, b.lo, k.lo, t.lo), least(c.hi, b.hi, k.hi, t.hi)
        FROM chain c JOIN binding_history_w b ON b.unit = c.unit AND c.lo < b.hi AND b.lo < c.hi
        JOIN connector_history_w k ON k.slug = b.slug AND k.lo < least(c.hi, b.hi) AND greatest(c.lo, b.lo) < k.hi
        JOIN tool_history_w t ON t.namespace = split_part(k.namespace, '.', 1)
         AND starts_with(t.canonical_id, k.namespace || '.')
         AND t.lo < least(c.hi, b.hi, k.hi) AND greatest(c.lo, b.lo, k.lo) < t.hi
        UNION ALL
        SELECT t.tool_key, 3, 'platform', NULL, 0, greatest(e.lo, p.lo, t.lo), least(e.hi, p.hi, t.hi)
        FROM roots e JOIN platform_namespaces_w p ON p.lo < e.hi AND e.lo < p.hi
        JOIN tool_history_w t ON t.namespace = p.namespace AND t.lo < least(e.hi, p.hi) AND greatest(e.lo, p.lo) < t.hi
        UNION ALL  -- the image an agent runs, or a unit (181: the unit's own, never inherited)
        SELECT i.tool_key, 4, 'image', NULL, 0, greatest(i.lo, t.lo), least(i.hi, t.hi)
        FROM (SELECT valid_from AS lo, coalesce(valid_to, 4611686018427387904) AS hi, unnest(tool_keys) AS tool_key
              FROM image_history WHERE of_kind = 'agent' AND agent = of_subject
              UNION ALL
              SELECT valid_from, coalesce(valid_to, 4611686018427387904), unnest(tool_keys)
              FROM unit_image_history WHERE of_kind = 'unit' AND unit = of_subject) i
        JOIN tool_history_w t ON t.tool_key = i.tool_key AND i.lo < t.hi AND t.lo < i.hi
    ),
    candidates AS (  -- ARCH-21: runtime-only helpers are never model-facing (a tool's visibility never changes)
        SELECT * FROM ways WHERE lo < hi
          AND tool_key NOT IN (SELECT tool_key FROM tools WHERE visibility = 'runtime_only')
    ),
    allowlist_entries AS (SELECT lo, hi, unnest(patterns) AS pattern FROM allowlist_history_w),
    listed AS (  -- its allowlist's entries, cut where a pattern shim of theirs comes or goes
        SELECT pattern, cut AS lo,
               coalesce(lead(cut) OVER (PARTITION BY pattern, row_lo ORDER BY cut), row_hi) AS hi
        FROM (SELECT l.pattern, l.lo AS row_lo, l.hi AS row_hi, l.lo AS cut FROM allowlist_entries l
              UNION
              SELECT l.pattern, l.lo, l.hi, x.cut FROM allowlist_entries l
              JOIN (SELECT pattern, lo AS cut FROM pattern_shims_w UNION SELECT pattern, hi FROM pattern_shims_w) x
                ON x.pattern = l.pattern AND l.lo < x.cut AND x.cut < l.hi)
    ),
    allow AS (  -- pattern shims expanded, as of the start of each piece
        SELECT coalesce(sh.target, l.pattern) AS pattern, l.lo, l.hi
        FROM listed l LEFT JOIN pattern_shims_w sh ON sh.pattern = l.pattern AND sh.lo <= l.lo AND l.lo < sh.hi
    ),
    pairs AS (SELECT DISTINCT tool_key FROM candidates),
    allowed AS (  -- when the allowlist admits a tool of the candidates
        SELECT t.tool_key, greatest(a.lo, t.lo) AS lo, least(a.hi, t.hi) AS hi
        FROM pairs q JOIN tool_history_w t ON t.tool_key = q.tool_key JOIN allow a ON a.lo < t.hi AND t.lo < a.hi
        WHERE a.pattern = '*' OR t.canonical_id = a.pattern
           OR a.pattern LIKE '%.*' AND t.namespace = split_part(a.pattern, '.', 1)
          AND starts_with(t.canonical_id, rtrim(a.pattern, '*'))
        UNION ALL
        SELECT al.tool_key, greatest(a.lo, al.lo), least(a.hi, al.hi)
        FROM allow a JOIN alias_history_w al ON al.lifecycle <> 'retired' AND a.lo < al.hi AND al.lo < a.hi
         AND (al.alias = a.pattern
              OR a.pattern LIKE '%.*' AND a.pattern <> '*' AND split_part(al.alias, '.', 1) = split_part(a.pattern, '.', 1)
             AND starts_with(al.alias, rtrim(a.pattern, '*')))
        WHERE al.tool_key IN (SELECT tool_key FROM pairs)
    ),
    moments AS (  -- where an agent's exposure may change: its versions and its allowlist's
        SELECT unnest([lo, hi]) AS p FROM agent_history_w UNION ALL SELECT unnest([lo, hi]) FROM allowlist_history_w
    ),
    points AS (  -- per tool, every position where what decides its row may change (UNION ALL: the lists
        -- below drop the repeats, which a UNION would do with one more aggregate)
        SELECT tool_key, unnest([lo, hi]) AS p FROM candidates
        UNION ALL SELECT c.tool_key, m.p FROM candidates c JOIN moments m ON c.lo < m.p AND m.p < c.hi
        UNION ALL SELECT tool_key, unnest([lo, hi]) FROM allowed
    ),
    segments AS (  -- the pieces between consecutive points (ordered lists, not windows: see 183)
        SELECT tool_key, ps[i] AS lo, ps[i + 1] AS hi
        FROM (SELECT *, unnest(range(1, len(ps))) AS i
              FROM (SELECT tool_key, list_sort(list_distinct(list(p))) AS ps FROM points GROUP BY tool_key))
    ),
    ranked AS (  -- the winning way over each piece covered by one, ranked as effective_set.sql ranks them
        SELECT s.tool_key, s.lo, s.hi,
               min(struct_pack(rank := c.rank, depth := c.depth, provenance := c.provenance,
                               inherited_from := c.inherited_from)) AS w
        FROM segments s JOIN candidates c ON c.tool_key = s.tool_key AND c.lo <= s.lo AND s.lo < c.hi
        GROUP BY s.tool_key, s.lo, s.hi
    ),
    admitted AS (  -- the pieces the allowlist admits
        SELECT DISTINCT r.tool_key, r.lo FROM ranked r
        JOIN allowed ok ON ok.tool_key = r.tool_key AND ok.lo <= r.lo AND r.lo < ok.hi
    ),
    described AS (  -- each piece's row, as of its first position
        SELECT r.tool_key, r.lo, r.hi,
               struct_pack(tool_id := t.canonical_id, namespace := t.namespace, description := t.description,
                           provenance := r.w.provenance, inherited_from := r.w.inherited_from,
                           exposure := CASE WHEN of_kind = 'unit' THEN NULL
                                            WHEN NOT t.schema_valid THEN 'disabled_invalid_schema'
                                            WHEN t.requires_state AND ag.state_mode = 'stateless'
                                                 THEN 'disabled_by_state_mode'
                                            WHEN al.agent IS NOT NULL AND ok.tool_key IS NULL THEN 'disabled_by_agent_allowlist'
                                            ELSE 'enabled' END) AS v
        FROM ranked r JOIN tool_history_w t ON t.tool_key = r.tool_key AND t.lo <= r.lo AND r.lo < t.hi
        LEFT JOIN agent_history_w ag ON ag.lo <= r.lo AND r.lo < ag.hi
        LEFT JOIN allowlist_history_w al ON al.lo <= r.lo AND r.lo < al.hi
        LEFT JOIN admitted ok ON ok.tool_key = r.tool_key AND ok.lo = r.lo
    ),
    runs AS (  -- packing: each row's pieces in order (list_sort orders the structs by their first field, lo,
        -- unique in a row)
        SELECT tool_key, list_sort(list(struct_pack(lo := lo, hi := hi, v := v))) AS r FROM described GROUP BY tool_key
    ),
    starts AS (  -- where a version starts: where the previous piece does not end, or differs
        SELECT *, list_filter(range(1, len(r) + 1),
                              lambda i: i = 1 OR r[i - 1].hi <> r[i].lo OR r[i - 1].v IS DISTINCT FROM r[i].v) AS s
        FROM runs
    ),
    versions AS (
        SELECT tool_key, r[s[j]].v AS v, r[s[j]].lo AS valid_from, r[coalesce(s[j + 1], len(r) + 1) - 1].hi AS valid_to
        FROM (SELECT *, unnest(range(1, len(s) + 1)) AS j FROM starts)
    )
    SELECT of_kind::VARCHAR AS subject_kind, of_subject::VARCHAR AS subject, x.tool_key, x.v.tool_id, x.v.namespace,
           x.v.description, x.v.provenance, x.v.inherited_from, x.v.exposure, x.valid_from,
           nullif(x.valid_to, 4611686018427387904) AS valid_to,
           f.recorded_at AS valid_from_time, e.recorded_at AS valid_to_time
    FROM versions x
    LEFT JOIN events f ON f.position = x.valid_from
    LEFT JOIN events e ON e.position = x.valid_to;

CREATE OR REPLACE MACRO effective_history_of_subject(of_subject) AS TABLE
    SELECT * FROM effective_history_for_subject(split_part(of_subject, ':', 1), split_part(of_subject, ':', 2));
