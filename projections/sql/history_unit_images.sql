-- unit_image_history changes of a batch (sql_history.py), from Unit.ImageDeclared.
SELECT d.unit, d.image, d.tools AS tool_ids, d.tool_keys, position, recorded_at, false AS ended
FROM (SELECT position, recorded_at,
             from_json(data, '{"unit": "VARCHAR", "image": "VARCHAR", "tools": ["VARCHAR"],
                               "tool_keys": ["VARCHAR"]}') AS d
      FROM events WHERE position BETWEEN $first AND $last AND type = 'Unit.ImageDeclared')
