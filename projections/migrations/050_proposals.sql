-- Proposals (catalog as code): each plan held by the catalog, and what became of it.
CREATE TABLE proposals (
    proposal_id   VARCHAR NOT NULL,      -- key
    base_position BIGINT  NOT NULL,      -- the head the plan was computed against
    digest        VARCHAR NOT NULL,      -- SHA-256 over the base position and the commands
    commands      JSON    NOT NULL,      -- [{"argv", "risk", "inputs"}], in the order they run
    position      BIGINT  NOT NULL,
    recorded_at   TIMESTAMPTZ NOT NULL,
    actor         VARCHAR
);
CREATE TABLE proposal_outcomes (
    proposal_id VARCHAR NOT NULL,        -- key: a proposal is applied or withdrawn once
    outcome     VARCHAR NOT NULL,        -- applied | withdrawn
    position    BIGINT  NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL,
    actor       VARCHAR
);
