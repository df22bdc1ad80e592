-- Every name the console's search finds: tools by canonical ID, their aliases (retired ones too: an old ID
-- still leads to its tool), units, agents and connectors. One row each: `kind`, `id`, the text its words are
-- searched in (`description`), a `detail` shown beside it, the tool facts the filters read (NULL for the
-- subjects and connectors, so any tool filter leaves them out), and `canonical_id` (the tool page an alias
-- opens); `tool_key`, `visibility` and `schema_valid` for the catalog's page.
SELECT 'tool' AS kind, t.canonical_id AS id, t.description, NULL AS detail, t.family, t.group_name, t.tier,
       'canonical' AS lifecycle, t.source, t.backing_server AS server, t.canonical_id, t.tool_key, t.visibility,
       t.schema_valid
FROM tools t
UNION ALL
SELECT 'alias', a.alias, t.description, 'alias of ' || t.canonical_id, t.family, t.group_name, t.tier,
       a.lifecycle, t.source, t.backing_server, t.canonical_id, t.tool_key, t.visibility, t.schema_valid
FROM aliases a JOIN tools t USING (tool_key)
UNION ALL
SELECT 'unit', u.name, NULL, CASE WHEN u.parent IS NULL THEN 'top-level unit' ELSE 'unit under ' || u.parent END,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM units u
UNION ALL
SELECT 'agent', g.name, NULL, 'agent in unit ' || g.unit, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM agent_history g WHERE g.valid_to IS NULL
UNION ALL
SELECT 'connector', c.slug, NULL, 'connector of namespace ' || c.namespace || ' (' || len(c.tools) || ' tool(s))',
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
FROM connectors c
