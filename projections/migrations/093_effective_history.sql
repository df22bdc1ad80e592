-- The effective sets through history (issue 14): one row per version of a (subject, tool) row of
-- effective_tools, type-2 like the other *_history tables, so SQL can join "who could call what, when".
-- Maintained by effective_history.py with the effective sets, in the same transaction; a pure function
-- of the events (a rebuild, a follower and any page size write the same rows).
CREATE TABLE effective_history (
    subject_kind    VARCHAR     NOT NULL,  -- unit | agent
    subject         VARCHAR     NOT NULL,
    tool_key        VARCHAR     NOT NULL,
    tool_id         VARCHAR     NOT NULL,  -- the canonical ID during this version
    namespace       VARCHAR     NOT NULL,
    description     VARCHAR,
    provenance      VARCHAR     NOT NULL,
    inherited_from  VARCHAR,
    exposure        VARCHAR,               -- NULL for units
    valid_from      BIGINT      NOT NULL,
    valid_to        BIGINT,
    valid_from_time TIMESTAMPTZ,
    valid_to_time   TIMESTAMPTZ
);
CREATE INDEX effective_history_subject ON effective_history (subject_kind, subject);

-- A read model built before this table has no history in it: mark every subject dirty and the sets valid
-- through nothing, so the next catch-up (or settle) recomputes every subject from position 1. Until then
-- readers see the sets as trailing, as after a crash, and the catch-up they trigger repairs it.
INSERT INTO effective_dirty
SELECT 'unit', name, 0 FROM unit_history WHERE valid_to IS NULL
UNION ALL
SELECT 'agent', name, 0 FROM agent_history WHERE valid_to IS NULL;
DELETE FROM effective_valid WHERE (SELECT count(*) FROM events) > 0;
INSERT INTO effective_valid SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM effective_valid);
