-- binding_history changes of a batch (sql_history.py): bound, or unbound (the key's history ends).
SELECT data->>'$.unit' AS unit, data->>'$.slug' AS slug, position, recorded_at,
       type = 'Unit.ConnectorUnbound' AS ended, coalesce({{effective_at}}, recorded_at) AS effective_at
FROM events
WHERE position BETWEEN $first AND $last AND type IN ('Unit.ConnectorBound', 'Unit.ConnectorUnbound')
