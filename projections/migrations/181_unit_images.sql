-- Images run by units (Spring Voyage, seed 002): a unit may run an image as an agent does. Its tools are the
-- unit's own, with provenance `image`: the unit's agents and sub-units do not inherit them (image tools
-- belong to the subject that runs the image). One version per Unit.ImageDeclared; a later one replaces it.
CREATE TABLE unit_image_history (
    unit VARCHAR NOT NULL, image VARCHAR NOT NULL, tool_ids VARCHAR[] NOT NULL, tool_keys VARCHAR[] NOT NULL,
    valid_from BIGINT NOT NULL, valid_to BIGINT, valid_from_time TIMESTAMPTZ NOT NULL, valid_to_time TIMESTAMPTZ
);
CREATE OR REPLACE VIEW units AS
    SELECT u.name, u.parent, u.valid_from AS since, i.image
    FROM unit_history u LEFT JOIN unit_image_history i ON i.unit = u.name AND i.valid_to IS NULL
    WHERE u.valid_to IS NULL;
CREATE VIEW unit_image_tools AS
    SELECT unit, image, unnest(tool_ids) AS tool_id, valid_from AS since FROM unit_image_history WHERE valid_to IS NULL;
