-- unit_history changes of a batch (sql_history.py): a unit's only version, from Unit.Created.
SELECT data->>'$.name' AS name, data->>'$.parent' AS parent, position, recorded_at, false AS ended
FROM events WHERE position BETWEEN $first AND $last AND type = 'Unit.Created'
