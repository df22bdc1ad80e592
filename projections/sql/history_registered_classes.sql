-- tool_class_history changes of the tools registered alone in a batch (sql_history.py): a version only
-- when the spec lists classes.
SELECT tool_key, classes, position, recorded_at, false AS ended
FROM (SELECT originator_id AS tool_key, CAST(data->'$.spec.classes' AS VARCHAR[]) AS classes, position, recorded_at
      FROM ({{registered_alone}}))
WHERE len(classes) > 0
