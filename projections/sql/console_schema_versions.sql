-- Each input schema version of the tool with key $key, oldest first, with the compatibility mode in force
-- when it was recorded (the last one set before it; `backward` before any was).
SELECT h.version, h.input_schema, h.schema_valid, h.valid_from AS position, h.valid_from_time AS recorded_at,
       coalesce(m.mode, 'backward') AS mode
FROM tool_schema_history h ASOF LEFT JOIN compatibility_modes m ON h.valid_from > m.position
WHERE h.tool_key = $key
ORDER BY h.version
