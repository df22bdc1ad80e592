-- The batch's Tool.Registered events whose tool has no other Tool.* event in the batch and no input schema
-- ($in_python lists the others' tool keys): their rows are built in SQL by catalog_part, the rest in Python.
-- `d` is the data read once into the fields the rows need (one JSON parse, not one per field).
-- Version 1 of Tool.Registered lacked `latest_release` (Tool.Registered.upcast_v1_v2 sets None), which
-- nothing here reads, so both versions read alike.
SELECT originator_id, position, recorded_at,
       from_json(data, '{"tool_id": "VARCHAR", "spec": {"family": "VARCHAR", "group": "VARCHAR",
           "tier": "VARCHAR", "visibility": "VARCHAR", "source": "VARCHAR", "backing_server": "VARCHAR",
           "plugin": "VARCHAR", "description": "VARCHAR", "schema_valid": "BOOLEAN", "classes": ["VARCHAR"],
           "risk": "VARCHAR", "requires_state": "BOOLEAN"}}') AS d
FROM events
WHERE position BETWEEN $first AND $last AND type = 'Tool.Registered'
  AND originator_id NOT IN (SELECT unnest($in_python::VARCHAR[]))
