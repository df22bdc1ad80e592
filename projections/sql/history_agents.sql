-- agent_history changes of a batch (sql_history.py), from Agent.Created.
SELECT data->>'$.name' AS name, data->>'$.unit' AS unit, data->>'$.state_mode' AS state_mode,
       position, recorded_at, false AS ended
FROM events WHERE position BETWEEN $first AND $last AND type = 'Agent.Created'
