-- Streaming state kept in the same transactions as the rows it covers.

-- Subjects whose effective set changed and has not yet been published to the changelog topic
-- (an outbox: written with the change, drained by the publisher after the broker acknowledged).
CREATE TABLE changelog_outbox (
    subject  VARCHAR NOT NULL,   -- key; unit:NAME or agent:NAME
    position BIGINT  NOT NULL    -- the batch that changed it
);

-- For a read model fed from Kafka: the next offset to read per partition.
CREATE TABLE kafka_offsets (
    topic       VARCHAR NOT NULL,
    partition   INTEGER NOT NULL,
    next_offset BIGINT  NOT NULL
);
