-- A page of one tool's history: every event of its aggregate (registration, renames, aliases and their
-- windows, schema versions, classes), oldest first, with the count of all of them on every row.
SELECT position, type, recorded_at, actor, reason, data, count(*) OVER () AS total
FROM events WHERE originator_id = $key
ORDER BY position
LIMIT $limit OFFSET $offset
