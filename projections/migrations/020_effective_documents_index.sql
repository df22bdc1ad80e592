-- An index on the subject of effective_documents: the most frequent read (`toolcat effective`, and
-- GET /v1/subjects/{subject}/effective under load) fetches one subject's row. Without it DuckDB scans the
-- subject column and materializes the `tools` JSON of the whole vector before filtering (≈ 70 MB for
-- 1,000 agents × 383 tools, ≈ 60 ms a read); with it the row is fetched alone (≈ 1–10 ms, measured).
CREATE INDEX effective_documents_subject ON effective_documents (subject);
