-- Every way the one subject in `_subjects` is granted tool $tool, the winner (place 1) first.
{{effective_set}}
SELECT tool_id, provenance, inherited_from, exposure, position, cause, place, exposure_position
FROM described WHERE tool_key = $tool ORDER BY place
