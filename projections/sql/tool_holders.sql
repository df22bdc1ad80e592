-- The current holders (kind, name) of the tool with key $key, whatever its ID: subjects whose materialized
-- set holds it, and subjects that name it in an explicit grant or an image (their sets may not be
-- materialized yet while a catch-up defers the refresh).
SELECT DISTINCT subject_kind, subject FROM effective_tools WHERE tool_key = $key
UNION
SELECT subject_kind, subject FROM grant_history WHERE valid_to IS NULL AND tool_key = $key
UNION
SELECT 'agent', agent FROM image_history WHERE valid_to IS NULL AND list_contains(tool_keys, $key)
UNION
SELECT 'unit', unit FROM unit_image_history WHERE valid_to IS NULL AND list_contains(tool_keys, $key)
