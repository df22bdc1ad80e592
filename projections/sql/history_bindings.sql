-- binding_history changes of a batch (sql_history.py): bound, or unbound (the key's history ends).
SELECT d.unit, d.slug, position, recorded_at, type = 'Unit.ConnectorUnbound' AS ended,
       coalesce({{effective_at}}, recorded_at) AS effective_at
FROM (SELECT position, recorded_at, type, type_version,
             from_json(data, '{"unit": "VARCHAR", "slug": "VARCHAR", "effective_at": "VARCHAR"}') AS d
      FROM events
      WHERE position BETWEEN $first AND $last AND type IN ('Unit.ConnectorBound', 'Unit.ConnectorUnbound'))
