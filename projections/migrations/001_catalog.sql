-- The catalog core: every event envelope, the projection's tracking row, the naming policy,
-- releases, tools, aliases with their deprecation milestones and removal steps.
-- Keys are documented, not declared: rows of a batch are replaced by delete + bulk insert, and
-- DuckDB's index checks would reject a key deleted and re-inserted in one transaction.

CREATE TABLE tracking (
    projection  VARCHAR NOT NULL,      -- key; 'catalog'
    position    BIGINT  NOT NULL,      -- last applied event position
    hash        VARCHAR NOT NULL,      -- hash of that event (the chain head)
    events      BIGINT  NOT NULL,      -- how many events applied
    updated_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE events (
    position           BIGINT  NOT NULL,  -- key
    prev_position      BIGINT  NOT NULL,
    originator_id      VARCHAR NOT NULL,
    originator_version BIGINT  NOT NULL,
    type               VARCHAR NOT NULL,
    type_version       INTEGER NOT NULL,
    recorded_at        TIMESTAMPTZ NOT NULL,
    actor              VARCHAR,
    reason             VARCHAR,
    idempotency_key    VARCHAR,
    data               JSON,
    prev_hash          VARCHAR NOT NULL,
    hash               VARCHAR NOT NULL
);

CREATE TABLE naming_policy (
    name        VARCHAR NOT NULL,
    policy      JSON    NOT NULL,
    position    BIGINT  NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE releases (
    version     VARCHAR NOT NULL,  -- key
    seq         INTEGER NOT NULL,  -- 1 for the first release published, then 2, 3…
    position    BIGINT  NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL,
    actor       VARCHAR
);

CREATE TABLE tools (
    tool_key            VARCHAR NOT NULL,  -- key; stable across renames
    canonical_id        VARCHAR NOT NULL,  -- unique
    family              VARCHAR,
    group_name          VARCHAR NOT NULL,
    tier                VARCHAR NOT NULL,
    visibility          VARCHAR NOT NULL,
    source              VARCHAR NOT NULL,
    backing_server      VARCHAR,
    plugin              VARCHAR,
    description         VARCHAR,
    input_schema        JSON,
    schema_valid        BOOLEAN NOT NULL,
    classes             VARCHAR[],
    risk                VARCHAR,
    requires_state      BOOLEAN NOT NULL,
    registered_position BIGINT NOT NULL,
    registered_at       TIMESTAMPTZ NOT NULL,
    canonical_position  BIGINT NOT NULL,   -- when canonical_id became canonical (registration or rename)
    updated_position    BIGINT NOT NULL
);

CREATE TABLE aliases (
    alias               VARCHAR NOT NULL,  -- key
    tool_key            VARCHAR NOT NULL,  -- the tool it resolves to (join tools for canonical_id)
    lifecycle           VARCHAR NOT NULL,  -- alias | deprecated | retired
    shim                BOOLEAN NOT NULL,
    added_position      BIGINT NOT NULL,
    deprecated_position BIGINT,
    retired_position    BIGINT,
    retired_release     VARCHAR,
    updated_position    BIGINT NOT NULL
);

CREATE TABLE alias_milestones (
    alias       VARCHAR NOT NULL,  -- key with milestone
    milestone   VARCHAR NOT NULL,
    release     VARCHAR NOT NULL,
    evidence    VARCHAR,
    position    BIGINT NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL,
    actor       VARCHAR
);

CREATE TABLE alias_steps (
    alias       VARCHAR NOT NULL,  -- key with step
    step        INTEGER NOT NULL,  -- 1..5; 3 and 4 are written by the retirement itself
    evidence    VARCHAR,
    position    BIGINT NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL,
    actor       VARCHAR
);
