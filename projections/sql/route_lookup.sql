-- What the name $id named as of position $at: its tool (canonical ID, key, classes) and the name's lifecycle.
WITH t AS (SELECT * FROM tool_history WHERE {{as_of}}),
     a AS (SELECT * FROM alias_history WHERE {{as_of}}),
     c AS (SELECT * FROM tool_class_history WHERE {{as_of}}),
     named AS (
         SELECT t.tool_key, t.canonical_id, 'canonical' AS lifecycle FROM t WHERE t.canonical_id = $id
         UNION ALL
         SELECT t.tool_key, t.canonical_id, a.lifecycle FROM a JOIN t USING (tool_key) WHERE a.alias = $id
     )
SELECT n.tool_key, n.canonical_id, n.lifecycle, coalesce(c.classes, []::VARCHAR[]) AS classes
FROM named n LEFT JOIN c USING (tool_key)
