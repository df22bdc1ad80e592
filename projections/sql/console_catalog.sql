-- A page of the catalog at `/` from `_entries` (console_entries.sql with ranks): tools grouped by family,
-- each family and each tool in natural order, with the count of all tools on every row; each tool's `row`
-- in `_entries`, whose rows are taken from the Arrow table (as console_search.sql's).
SELECT e.row, count(*) OVER () AS total
FROM _entries e WHERE e.kind = 'tool'
ORDER BY e.family_rank NULLS LAST, e.row
LIMIT $limit OFFSET $offset
