-- Configuration that still names a deprecated or retired ID, as it stands now: allowlist entries,
-- explicit grants, connector tool lists, image declarations, route rules (the tool they deny or follow)
-- and secret references (the tools they allow), each as the operator wrote it.
-- $alias: one alias, or NULL for every one. `position` is the event that set the entry.
WITH legacy AS (
    SELECT alias, lifecycle FROM aliases
    WHERE lifecycle IN ('deprecated', 'retired') AND ($alias::VARCHAR IS NULL OR alias = $alias)
), named AS (
    SELECT 'allowlist' AS kind, 'agent:' || agent AS holder, unnest(patterns) AS id, valid_from AS position
    FROM allowlist_history WHERE valid_to IS NULL
    UNION ALL
    SELECT 'grant', subject_kind || ':' || subject, target, since FROM grants
    UNION ALL
    SELECT 'connector', 'connector:' || slug, unnest(tools), since FROM connectors
    UNION ALL
    SELECT 'image', 'agent:' || agent, tool_id, since FROM image_tools
    UNION ALL
    SELECT 'image', 'unit:' || unit, tool_id, since FROM unit_image_tools
    UNION ALL
    SELECT 'route rule', 'rule:' || rule_id, deny_tool, valid_from FROM route_rule_history
    WHERE valid_to IS NULL AND deny_tool IS NOT NULL
    UNION ALL
    SELECT 'route rule', 'rule:' || rule_id, after_tool, valid_from FROM route_rule_history
    WHERE valid_to IS NULL AND after_tool IS NOT NULL
    UNION ALL
    SELECT 'secret reference', 'secret:' || ref, unnest(allowed_tool_ids), valid_from FROM secret_ref_history
    WHERE valid_to IS NULL
)
SELECT n.kind, n.holder, n.id, l.lifecycle, n.position
FROM named n JOIN legacy l ON l.alias = n.id
ORDER BY n.id, n.kind, n.holder
