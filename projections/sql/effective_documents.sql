-- One row per subject in `_subjects`: `kind:name` and its effective set as the JSON `toolcat effective`
-- answers (sorted by tool ID; '[]' for an empty set), built from the rows, in the columns of
-- effective_tools, of the relation the caller names as the fragment `rows`.
SELECT s.kind || ':' || s.name AS subject,
       coalesce(to_json(list(struct_pack({{effective_fields}}) ORDER BY tool_id)
                        FILTER (WHERE tool_id IS NOT NULL)), '[]') AS tools
FROM _subjects s LEFT JOIN {{rows}} e ON e.subject_kind = s.kind AND e.subject = s.name
GROUP BY 1
