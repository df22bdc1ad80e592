-- Tool input schemas and the catalog's compatibility mode (`tool update --schema`, `catalog compatibility`).
-- tool_schema_history: a type-2 history table, one row per schema version of a tool (valid from `valid_from`
-- inclusive until `valid_to` exclusive, NULL while current); `tools.input_schema` holds the current one.
CREATE TABLE tool_schema_history (
    tool_key     VARCHAR NOT NULL,           -- stable across renames
    version      INTEGER NOT NULL,           -- 1 for the registration's schema, then 2, 3…
    input_schema JSON    NOT NULL,
    schema_valid BOOLEAN NOT NULL,           -- its metaschema check when recorded
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
-- Each compatibility mode recorded; the latest is in force, `backward` while there is none.
CREATE TABLE compatibility_modes (
    mode        VARCHAR NOT NULL,            -- backward | forward | full | none
    position    BIGINT  NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL,
    actor       VARCHAR
);

-- A read model built before this migration knew a schema from registration only: its first version.
INSERT INTO tool_schema_history
SELECT tool_key, 1, input_schema, schema_valid, registered_position, NULL, registered_at, NULL
FROM tools WHERE input_schema IS NOT NULL;
