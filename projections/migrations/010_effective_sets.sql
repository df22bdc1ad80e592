-- Effective sets refreshed once per catch-up instead of once per batch (issue 11).

-- Subjects whose effective set a projected batch may have changed and that are not refreshed yet, written
-- in the same transaction as the tracking row; `position` is the last event that touched the subject.
CREATE TABLE effective_dirty (
    subject_kind VARCHAR NOT NULL,  -- unit | agent
    subject      VARCHAR NOT NULL,
    position     BIGINT  NOT NULL
);

-- One row: effective_tools and effective_documents are valid through this position. It trails the
-- tracking row while a catch-up is under way (or after one crashed); nothing serves sets from behind it.
CREATE TABLE effective_valid (
    position BIGINT NOT NULL
);
-- Read models built before this migration refreshed their sets with every batch: valid through tracking.
INSERT INTO effective_valid SELECT coalesce(max(position), 0) FROM tracking WHERE projection = 'catalog';
