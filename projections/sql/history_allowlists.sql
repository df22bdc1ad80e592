-- allowlist_history changes of a batch (sql_history.py): set, or cleared (the key's history ends).
SELECT data->>'$.agent' AS agent, CAST(data->'$.patterns' AS VARCHAR[]) AS patterns,
       position, recorded_at, type = 'Agent.AllowlistCleared' AS ended
FROM events WHERE position BETWEEN $first AND $last AND type IN ('Agent.AllowlistSet', 'Agent.AllowlistCleared')
