-- Seals recorded by `toolcat audit seal`: the chain head at a position, stored in the event store.
CREATE TABLE seals (
    sealed_position BIGINT  NOT NULL,  -- the chain position the seal vouches for
    hash            VARCHAR NOT NULL,  -- the chain head at that position
    events          BIGINT  NOT NULL,  -- how many events the chain held up to it
    position        BIGINT  NOT NULL,  -- the seal's own event
    recorded_at     TIMESTAMPTZ NOT NULL,
    actor           VARCHAR
);
