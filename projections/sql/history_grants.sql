-- grant_history changes of a batch (sql_history.py): added, or revoked (the key's history ends).
-- The subject `kind:name` splits at its first colon (str.partition); a grant's id is its tool key, or
-- its target when it has none (a pattern), as subjects_part did with `tool_key or target`.
SELECT split_part(d.subject, ':', 1) AS subject_kind,
       CASE WHEN strpos(d.subject, ':') > 0 THEN d.subject[strpos(d.subject, ':') + 1:] ELSE '' END AS subject,
       coalesce(nullif(d.tool_key, ''), d.target) AS grant_id, d.target, d.tool_key,
       position, recorded_at, type = 'Grants.Revoked' AS ended, coalesce({{effective_at}}, recorded_at) AS effective_at
FROM (SELECT position, recorded_at, type, type_version,
             from_json(data, '{"subject": "VARCHAR", "target": "VARCHAR", "tool_key": "VARCHAR",
                               "effective_at": "VARCHAR"}') AS d
      FROM events
      WHERE position BETWEEN $first AND $last AND type IN ('Grants.Added', 'Grants.Revoked'))
