-- effective_documents is read one subject's row at a time (`toolcat effective`, and
-- GET /v1/subjects/{subject}/effective under load), so its JSON is stored uncompressed and the subject is
-- indexed. DuckDB otherwise compresses the large JSON values with ZSTD and a read decompresses far more
-- than the one row it wants: measured on 1,000 agents × 10,020 tools (≈ 70 KB a subject), ≈ 23 ms a read
-- with the index alone, ≈ 0.7 ms uncompressed and indexed; the price is ≈ 60 MB of file instead of ≈ 1 MB.
CREATE TABLE effective_documents_plain (
    subject VARCHAR NOT NULL,                               -- key; unit:NAME or agent:NAME
    tools   JSON    NOT NULL USING COMPRESSION uncompressed  -- as in 006
);
INSERT INTO effective_documents_plain SELECT subject, tools FROM effective_documents;
DROP TABLE effective_documents;
ALTER TABLE effective_documents_plain RENAME TO effective_documents;
CREATE INDEX effective_documents_subject ON effective_documents (subject);
