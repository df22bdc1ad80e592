-- image_history changes of a batch (sql_history.py), from Agent.ImageDeclared.
SELECT data->>'$.agent' AS agent, data->>'$.image' AS image, CAST(data->'$.tools' AS VARCHAR[]) AS tool_ids,
       CAST(data->'$.tool_keys' AS VARCHAR[]) AS tool_keys, position, recorded_at, false AS ended
FROM events WHERE position BETWEEN $first AND $last AND type = 'Agent.ImageDeclared'
