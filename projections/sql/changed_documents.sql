-- Of the subjects in `_subjects`, those whose document rendered from the rows of the relation named by the
-- fragment `rows` differs from the stored one in effective_documents, or that have only one of the two.
SELECT coalesce(f.subject, d.subject)
FROM ({{effective_documents}}) f
FULL JOIN (SELECT * FROM effective_documents WHERE subject IN (SELECT kind || ':' || name FROM _subjects)) d
       ON d.subject = f.subject
WHERE f.tools::VARCHAR IS DISTINCT FROM d.tools::VARCHAR
