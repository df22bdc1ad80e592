-- The batch's Tool.Registered events whose tool has no other Tool.* event in the batch and no input schema
-- ($kept lists the others' tool keys): their rows are built in SQL by catalog_part, the rest in Python.
-- Version 1 of Tool.Registered lacked `latest_release` (Tool.Registered.upcast_v1_v2 sets None), which
-- nothing here reads, so both versions read alike.
SELECT * FROM events
WHERE position BETWEEN $first AND $last AND type = 'Tool.Registered'
  AND originator_id NOT IN (SELECT unnest($kept::VARCHAR[]))
