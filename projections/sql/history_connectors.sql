-- connector_history changes of a batch (sql_history.py), from Connector.Registered.
SELECT data->>'$.slug' AS slug, data->>'$.namespace' AS namespace, CAST(data->'$.tools' AS VARCHAR[]) AS tools,
       position, recorded_at, false AS ended
FROM events WHERE position BETWEEN $first AND $last AND type = 'Connector.Registered'
