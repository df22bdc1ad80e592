-- How many rows of effective_tools and effective_documents, for the subjects in `_subjects`, differ from
-- a recomputation from the history tables (as of $at, which the caller sets past the last position).
WITH computed AS MATERIALIZED ({{effective_rows}}),
served AS (
    SELECT e.* FROM effective_tools e JOIN _subjects s ON e.subject_kind = s.kind AND e.subject = s.name
),
expected AS (
    SELECT subject, tools::VARCHAR AS tools FROM ({{effective_documents}})
),
stored AS (
    SELECT d.subject, d.tools::VARCHAR AS tools FROM effective_documents d
    WHERE d.subject IN (SELECT kind || ':' || name FROM _subjects)
)
SELECT (SELECT count(*) FROM ((SELECT * FROM computed EXCEPT ALL SELECT * FROM served) UNION ALL
                              (SELECT * FROM served EXCEPT ALL SELECT * FROM computed)))
     + (SELECT count(*) FROM ((SELECT * FROM expected EXCEPT ALL SELECT * FROM stored) UNION ALL
                              (SELECT * FROM stored EXCEPT ALL SELECT * FROM expected))) AS n
