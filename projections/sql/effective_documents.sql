-- One row per subject in `_subjects`: `kind:name` and its effective set as the JSON `toolcat effective`
-- answers (sorted by tool ID; '[]' for an empty set), built from the rows, in the columns of
-- effective_tools, of the relation the caller names as the fragment `rows`.
-- Sorted by list_sort after the aggregate, not by list(... ORDER BY tool_id): the same order, since
-- tool_id leads the struct and is unique in a set (one row per tool key; a canonical ID names one tool),
-- and the ordered aggregate is most of the render's cost (200k events, 630,876 rows: 1.15 -> 0.8 s CPU).
SELECT s.kind || ':' || s.name AS subject,
       coalesce(to_json(list_sort(list(struct_pack({{effective_fields}}))
                                  FILTER (WHERE tool_id IS NOT NULL))), '[]') AS tools
FROM _subjects s LEFT JOIN {{rows}} e ON e.subject_kind = s.kind AND e.subject = s.name
GROUP BY 1
