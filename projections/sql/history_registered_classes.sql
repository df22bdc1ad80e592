-- tool_class_history changes of the tools registered alone in a batch (sql_history.py): a version only
-- when the spec lists classes.
SELECT originator_id AS tool_key, d.spec.classes AS classes, position, recorded_at, false AS ended
FROM ({{registered_alone}})
WHERE len(d.spec.classes) > 0
