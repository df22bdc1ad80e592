-- A page of the console's search over `_entries` (console_entries.sql, each with its `rank` in natural
-- order: tool_2 before tool_10): those whose ID starts with $prefix or whose description holds every one of
-- $words (both lower-case; no text: every entry), narrowed by the filters (NULL: any), with the count of
-- all that match on every row. It answers each entry's `row` in `_entries` (sorted in that order already):
-- the rows themselves are taken from the Arrow table, ten times faster than DuckDB sorts wide rows.
SELECT e.row, count(*) OVER () AS total
FROM _entries e
WHERE ($prefix IS NULL
       OR starts_with(lower(e.id), $prefix)
       OR (len($words) > 0 AND e.description IS NOT NULL
           AND len(list_filter($words, lambda w: NOT contains(lower(e.description), w))) = 0))
  AND ($kind IS NULL OR e.kind = $kind)
  AND ($family IS NULL OR e.family = $family)
  AND ($group IS NULL OR e.group_name = $group)
  AND ($tier IS NULL OR e.tier = $tier)
  AND ($lifecycle IS NULL OR e.lifecycle = $lifecycle)
  AND ($source IS NULL OR e.source = $source)
  AND ($server IS NULL OR e.server = $server)
ORDER BY e.row
LIMIT $limit OFFSET $offset
