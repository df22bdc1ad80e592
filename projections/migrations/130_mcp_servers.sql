-- MCP servers (DESIGN.md section 3): each entry's versions, and the evidence of every applied sync.
-- Credentials are secret references (env:NAME) only: no column holds a value.
CREATE TABLE mcp_server_history (
    name        VARCHAR NOT NULL,        -- key; the <server> segment of mcp.<server>.<tool>
    transport   VARCHAR NOT NULL,        -- stdio | http
    command     VARCHAR, args VARCHAR[] NOT NULL,
    env         JSON NOT NULL,           -- plain, non-secret variables: {"LOG_LEVEL": "debug"}
    env_refs    JSON NOT NULL,           -- variable → secret reference: {"API_TOKEN": "env:API_TOKEN"}
    url         VARCHAR,
    header_refs JSON NOT NULL,           -- HTTP header → secret reference
    tier        VARCHAR NOT NULL,        -- the tier its synced tools get
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE VIEW mcp_servers AS
SELECT * EXCLUDE (valid_to, valid_to_time) FROM mcp_server_history WHERE valid_to IS NULL;

-- "What did server X offer on date D, and which version of it?": the last row with synced_at <= D.
CREATE TABLE mcp_syncs (
    server           VARCHAR NOT NULL,   -- the entry's name
    server_name      VARCHAR,            -- serverInfo.name as the server said it
    server_version   VARCHAR,            -- serverInfo.version
    protocol_version VARCHAR,            -- the MCP protocol version negotiated
    tools_hash       VARCHAR NOT NULL,   -- SHA-256 of the canonical JSON of its whole tools/list
    tool_count       INTEGER NOT NULL,
    proposal_id      VARCHAR,            -- the proposal whose apply recorded the sync
    listed_at        TIMESTAMPTZ NOT NULL, -- when tools/list was read
    position         BIGINT NOT NULL,
    synced_at        TIMESTAMPTZ NOT NULL, -- when the sync was recorded
    actor            VARCHAR
);

-- The tools each server backs, a version per change: the upstream name a call of the tool ID uses, and
-- whether the server still lists it. A tool gone upstream is deprecated (never deleted) in the release
-- in force then; ARCH-21's window lets it go no earlier than the next minor release after that one.
CREATE TABLE mcp_tool_history (
    tool_id       VARCHAR NOT NULL,      -- key; mcp.<server>.<tool>
    server        VARCHAR NOT NULL,
    upstream_name VARCHAR NOT NULL,      -- the name tools/call sends upstream
    listed        BOOLEAN NOT NULL,      -- false: gone upstream, deprecated
    deprecated_release VARCHAR,          -- the release in force when it went (NULL: none published yet)
    earliest_removal_release VARCHAR,    -- the next minor release after deprecated_release
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE VIEW mcp_tools AS
SELECT * EXCLUDE (valid_to, valid_to_time) FROM mcp_tool_history WHERE valid_to IS NULL;
