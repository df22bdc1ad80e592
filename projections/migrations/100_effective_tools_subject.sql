-- One subject's rows of effective_tools are found through an index only when the index is on one column:
-- DuckDB turns `subject = ...` or `list_contains([...], subject)` into an index scan of a one-column index,
-- but scans the whole table for an equality on both columns of 005's (subject_kind, subject) index.
-- Measured on 1,000 agents × 10,020 tools (400,709 rows): a follower's lookup of 15 rows of one unit
-- 4.1 ms with 005's index, 2.3 ms with this one. The kind is filtered after the index scan.
DROP INDEX effective_tools_subject;
CREATE INDEX effective_tools_subject ON effective_tools (subject);
