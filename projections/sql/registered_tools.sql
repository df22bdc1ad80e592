-- The `tools` rows of the tools registered alone in a batch (registered_alone.sql), as catalog_part's
-- tool_registered writes them: a missing `schema_valid` is true, `requires_state` false, `classes` empty.
SELECT originator_id AS tool_key, data->>'$.tool_id' AS canonical_id, data->>'$.spec.family' AS family,
       data->>'$.spec.group' AS group_name, data->>'$.spec.tier' AS tier,
       data->>'$.spec.visibility' AS visibility, data->>'$.spec.source' AS source,
       data->>'$.spec.backing_server' AS backing_server, data->>'$.spec.plugin' AS plugin,
       data->>'$.spec.description' AS description, NULL AS input_schema,
       coalesce(CAST(data->>'$.spec.schema_valid' AS BOOLEAN), true) AS schema_valid,
       coalesce(CAST(data->'$.spec.classes' AS VARCHAR[]), []) AS classes, data->>'$.spec.risk' AS risk,
       coalesce(CAST(data->>'$.spec.requires_state' AS BOOLEAN), false) AS requires_state,
       position AS registered_position, recorded_at AS registered_at, position AS canonical_position,
       position AS updated_position
FROM ({{registered_alone}})
