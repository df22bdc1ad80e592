-- Of the subjects in `_subjects`, those whose freshly computed document (`_fresh_documents`) differs from
-- the stored one, or that have only one of the two.
SELECT coalesce(f.subject, d.subject)
FROM _fresh_documents f
FULL JOIN (SELECT * FROM effective_documents WHERE subject IN (SELECT kind || ':' || name FROM _subjects)) d
       ON d.subject = f.subject
WHERE f.tools::VARCHAR IS DISTINCT FROM d.tools::VARCHAR
