-- tool_history changes of the tools registered alone in a batch (sql_history.py): their first version.
SELECT originator_id AS tool_key, d.tool_id AS canonical_id, split_part(d.tool_id, '.', 1) AS namespace,
       d.spec.description AS description, coalesce(d.spec.schema_valid, true) AS schema_valid,
       coalesce(d.spec.requires_state, false) AS requires_state, position, recorded_at, false AS ended
FROM ({{registered_alone}})
