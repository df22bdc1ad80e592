-- Subjects, connectors, bindings, grants, images, allowlists, and the effective tool set.
-- Every *_history table is type-2: one row per version of a key, valid from `valid_from` (an event
-- position, inclusive) until `valid_to` (exclusive; NULL while current), with the matching times.
-- As-of answers read these tables at a position; current answers read the views or effective_tools.

CREATE TABLE tool_history (
    tool_key VARCHAR NOT NULL, canonical_id VARCHAR NOT NULL, namespace VARCHAR NOT NULL,
    description VARCHAR, schema_valid BOOLEAN NOT NULL, requires_state BOOLEAN NOT NULL,
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE TABLE alias_history (
    alias VARCHAR NOT NULL, tool_key VARCHAR NOT NULL, lifecycle VARCHAR NOT NULL, shim BOOLEAN NOT NULL,
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE TABLE platform_namespaces (
    namespace VARCHAR NOT NULL,
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE TABLE pattern_shims (
    pattern VARCHAR NOT NULL, target VARCHAR NOT NULL,   -- an allowlist pattern shim and one of its expansions
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE TABLE unit_history (
    name VARCHAR NOT NULL, parent VARCHAR,
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE TABLE agent_history (
    name VARCHAR NOT NULL, unit VARCHAR NOT NULL, state_mode VARCHAR NOT NULL,
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE TABLE allowlist_history (
    agent VARCHAR NOT NULL, patterns VARCHAR[] NOT NULL,   -- as the operator wrote them
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE TABLE image_history (
    agent VARCHAR NOT NULL, image VARCHAR NOT NULL, tool_ids VARCHAR[] NOT NULL, tool_keys VARCHAR[] NOT NULL,
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE TABLE connector_history (
    slug VARCHAR NOT NULL, namespace VARCHAR NOT NULL, tools VARCHAR[] NOT NULL,
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE TABLE binding_history (
    unit VARCHAR NOT NULL, slug VARCHAR NOT NULL,
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE TABLE grant_history (
    subject_kind VARCHAR NOT NULL, subject VARCHAR NOT NULL,
    grant_id VARCHAR NOT NULL,          -- the tool key for a tool grant, the pattern for ns.*
    target VARCHAR NOT NULL,            -- as granted: a canonical ID at grant time, or ns.*
    tool_key VARCHAR,                   -- NULL for a pattern
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);

-- The current effective tool set of every subject, maintained per batch for the subjects it touched.
CREATE TABLE effective_tools (
    subject_kind VARCHAR NOT NULL, subject VARCHAR NOT NULL, tool_key VARCHAR NOT NULL,
    tool_id VARCHAR NOT NULL, namespace VARCHAR NOT NULL, description VARCHAR,
    provenance VARCHAR NOT NULL,        -- explicit | connector:<slug> | platform | image
    inherited_from VARCHAR,             -- the unit the winning grant lives on, when inherited
    exposure VARCHAR                    -- agents only: enabled | disabled_*
);

CREATE VIEW units AS SELECT name, parent, valid_from AS since FROM unit_history WHERE valid_to IS NULL;
CREATE VIEW agents AS
    SELECT a.name, a.unit, a.state_mode, i.image, l.patterns AS allowlist, a.valid_from AS since
    FROM agent_history a
    LEFT JOIN image_history i ON i.agent = a.name AND i.valid_to IS NULL
    LEFT JOIN allowlist_history l ON l.agent = a.name AND l.valid_to IS NULL
    WHERE a.valid_to IS NULL;
CREATE VIEW connectors AS SELECT slug, namespace, tools, valid_from AS since FROM connector_history WHERE valid_to IS NULL;
CREATE VIEW bindings AS SELECT unit, slug, valid_from AS since FROM binding_history WHERE valid_to IS NULL;
CREATE VIEW grants AS SELECT subject_kind, subject, target, tool_key, valid_from AS since FROM grant_history WHERE valid_to IS NULL;
CREATE VIEW image_tools AS
    SELECT agent, image, unnest(tool_ids) AS tool_id, valid_from AS since FROM image_history WHERE valid_to IS NULL;
