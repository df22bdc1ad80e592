-- The MCP gateway's decision log (issue 34): one row per tools/call a session asked for, allowed or denied,
-- appended in batches by the gateway (infra/mcp/gateway/decisions.py). Not derived from the events: the
-- fingerprint and a rebuild's replay leave it out (a rebuild copies it over).
CREATE TABLE gateway_decisions (
    decided_at     TIMESTAMPTZ NOT NULL,   -- when the gateway decided
    subject        VARCHAR NOT NULL,       -- the token's subject (agent:A or unit:U), never the request's
    token          VARCHAR NOT NULL,       -- the token's name
    session_id     VARCHAR,                -- the MCP session (Mcp-Session-Id); NULL on stdio
    asked          VARCHAR NOT NULL,       -- the tool name the agent asked for
    canonical_id   VARCHAR,                -- what it resolved to (NULL: no such name)
    server         VARCHAR,                -- the backing MCP server entry the call went (or would go) to
    allowed        BOOLEAN NOT NULL,       -- forwarded upstream (true) or refused (false)
    reason         VARCHAR NOT NULL,       -- the reason code (docs/mcp.md lists them)
    matched_rule   VARCHAR,                -- the route rule that denied it (ADR-027), if one did
    evidence       JSON,                   -- the route decision as `route check` gives it, and the alias's sunset
    set_position   BIGINT NOT NULL,        -- the position of the subject's set the decision used
    latency_ms     DOUBLE NOT NULL,        -- from the request to the answer (upstream time included)
    upstream_error VARCHAR,                -- what the upstream server did wrong, when it did
    arguments      JSON,                   -- only with TOOLCAT_GATEWAY_RECORD_ARGUMENTS=true
    result         JSON                    -- idem
);
