-- Planned dates of future releases (`toolcat release plan`): every plan recorded, the latest per version
-- in force. A deprecated alias's `Sunset` is the planned date of its earliest removal release.
CREATE TABLE release_plans (
    version      VARCHAR NOT NULL,
    planned_date DATE    NOT NULL,
    position     BIGINT  NOT NULL,  -- key; the latest position of a version is its plan in force
    recorded_at  TIMESTAMPTZ NOT NULL,
    actor        VARCHAR
);
