-- grant_history changes of a batch (sql_history.py): added, or revoked (the key's history ends).
-- The subject `kind:name` splits at its first colon (str.partition); a grant's id is its tool key, or
-- its target when it has none (a pattern), as subjects_part did with `tool_key or target`.
SELECT split_part(subject, ':', 1) AS subject_kind,
       CASE WHEN strpos(subject, ':') > 0 THEN subject[strpos(subject, ':') + 1:] ELSE '' END AS subject,
       coalesce(nullif(tool_key, ''), target) AS grant_id, target, tool_key,
       position, recorded_at, ended, effective_at
FROM (SELECT data->>'$.subject' AS subject, data->>'$.tool_key' AS tool_key, data->>'$.target' AS target,
             position, recorded_at, type = 'Grants.Revoked' AS ended,
             coalesce({{effective_at}}, recorded_at) AS effective_at
      FROM events
      WHERE position BETWEEN $first AND $last AND type IN ('Grants.Added', 'Grants.Revoked'))
