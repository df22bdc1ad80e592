-- Secret aliases (ARCH-19): each agent's shorthand names for secret references, with the operator-safe
-- display name that may be shown to a model. Never a value: an alias names a reference, which names a secret.
CREATE TABLE secret_alias_history (
    agent VARCHAR NOT NULL, secret_alias VARCHAR NOT NULL,  -- key: an alias is unique in its agent's scope
    ref VARCHAR NOT NULL, display_name VARCHAR,
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE VIEW secret_aliases AS SELECT * EXCLUDE (valid_to, valid_to_time) FROM secret_alias_history
WHERE valid_to IS NULL;
