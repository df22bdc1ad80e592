-- Routing (ADR-027) and nodes and secret references (ARCH-19): type-2 history tables (one row per version
-- of a key, valid from `valid_from` inclusive until `valid_to` exclusive, NULL while current) and a view of
-- each table's current versions. Secret references hold no value anywhere: there is no column for one.

CREATE TABLE tool_class_history (
    tool_key VARCHAR NOT NULL, classes VARCHAR[] NOT NULL,  -- ordered labels such as source:sensitive
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE TABLE route_rule_history (
    rule_id VARCHAR NOT NULL,
    deny_any_class VARCHAR[] NOT NULL, deny_all_classes VARCHAR[] NOT NULL,
    deny_tool VARCHAR, deny_tool_key VARCHAR,      -- canonical ID when written; the key follows renames
    after_any_class VARCHAR[] NOT NULL, after_tool VARCHAR, after_tool_key VARCHAR,
    scope VARCHAR,                                 -- unit:U, agent:A, or NULL for every subject
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE TABLE node_history (
    node_key VARCHAR NOT NULL,                     -- the node aggregate's id (events' originator_id)
    name VARCHAR NOT NULL, paired BOOLEAN NOT NULL, ready BOOLEAN NOT NULL,
    capabilities VARCHAR[] NOT NULL,               -- advertised capability IDs, tyrum.<area>.<action>
    denied_tools VARCHAR[] NOT NULL, denied_tool_keys VARCHAR[] NOT NULL,
    lane VARCHAR,                                  -- the lane the node is attached to
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE TABLE secret_ref_history (
    ref VARCHAR NOT NULL, allowed_tool_ids VARCHAR[] NOT NULL, allowed_tool_keys VARCHAR[] NOT NULL,
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);

-- A read model built before this migration knew classes from registration only: their first version.
INSERT INTO tool_class_history
SELECT tool_key, classes, registered_position, registered_at, NULL, NULL FROM tools WHERE len(classes) > 0;

-- Every live name of a tool (canonical, alias, deprecated, shim) with the canonical tool's classes.
CREATE VIEW tool_classes AS
SELECT t.canonical_id AS tool_name, t.canonical_id, t.tool_key, 'canonical' AS lifecycle, c.classes
FROM tools t JOIN tool_class_history c ON c.tool_key = t.tool_key AND c.valid_to IS NULL
UNION ALL
SELECT a.alias, t.canonical_id, t.tool_key, a.lifecycle, c.classes
FROM aliases a JOIN tools t USING (tool_key)
JOIN tool_class_history c ON c.tool_key = t.tool_key AND c.valid_to IS NULL
WHERE a.lifecycle <> 'retired';
CREATE VIEW route_rules AS SELECT * EXCLUDE (valid_to, valid_to_time) FROM route_rule_history WHERE valid_to IS NULL;
CREATE VIEW nodes AS SELECT * EXCLUDE (valid_to, valid_to_time) FROM node_history WHERE valid_to IS NULL;
CREATE VIEW secret_refs AS SELECT * EXCLUDE (valid_to, valid_to_time) FROM secret_ref_history WHERE valid_to IS NULL;
