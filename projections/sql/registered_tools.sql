-- The `tools` rows of the tools registered alone in a batch (registered_alone.sql), as catalog_part's
-- tool_registered writes them: a missing `schema_valid` is true, `requires_state` false, `classes` empty.
SELECT originator_id AS tool_key, d.tool_id AS canonical_id, d.spec.family AS family, d.spec.group AS group_name,
       d.spec.tier AS tier, d.spec.visibility AS visibility, d.spec.source AS source,
       d.spec.backing_server AS backing_server, d.spec.plugin AS plugin, d.spec.description AS description,
       NULL AS input_schema, coalesce(d.spec.schema_valid, true) AS schema_valid,
       coalesce(d.spec.classes, []) AS classes, d.spec.risk AS risk,
       coalesce(d.spec.requires_state, false) AS requires_state,
       position AS registered_position, recorded_at AS registered_at, position AS canonical_position,
       position AS updated_position
FROM ({{registered_alone}})
