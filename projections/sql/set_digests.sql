-- One digest per subject in `_subjects` of its materialized set (the digest scheme of digest.py), so
-- comparing sets before and after a refresh never moves their rows into Python. A subject with an empty
-- set has no row.
SELECT subject, {{set_digest}} AS digest
FROM (SELECT r.subject_kind || ':' || r.subject AS subject, {{row_md5}} AS row_md5
      FROM effective_tools r JOIN _subjects s ON r.subject_kind = s.kind AND r.subject = s.name)
GROUP BY subject
