-- The position of the last event that changed each subject's current effective set: the `position` and
-- ETag of `effective SUBJECT` and of the changelog's document (CONTRACT v1.2), so an unrelated write
-- leaves a subject's ETag as it was. Written with the changelog outbox (effective/maintenance.py). A read
-- model from before this migration has no row until a subject changes: its reads answer the read model's
-- position until then (as before), and `toolcat rebuild` fills every row.
CREATE TABLE subject_changes (
    subject  VARCHAR NOT NULL,  -- key; unit:NAME or agent:NAME
    position BIGINT  NOT NULL
);
CREATE INDEX subject_changes_subject ON subject_changes (subject);
