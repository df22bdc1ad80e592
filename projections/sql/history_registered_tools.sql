-- tool_history changes of the tools registered alone in a batch (sql_history.py): their first version.
SELECT originator_id AS tool_key, data->>'$.tool_id' AS canonical_id,
       split_part(data->>'$.tool_id', '.', 1) AS namespace, data->>'$.spec.description' AS description,
       coalesce(CAST(data->>'$.spec.schema_valid' AS BOOLEAN), true) AS schema_valid,
       coalesce(CAST(data->>'$.spec.requires_state' AS BOOLEAN), false) AS requires_state,
       position, recorded_at, false AS ended
FROM ({{registered_alone}})
