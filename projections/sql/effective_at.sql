-- When a grant or binding change took effect as the operator said (`--effective-at`), NULL when not said,
-- from `d`, the event's data read by from_json with a VARCHAR `effective_at`: the SQL twin of
-- subjects_part.effective_at over the upcast data. Version 1 of these events had no `effective_at`;
-- TakesEffect.upcast_v1_v2 (domain/base.py) sets it to None, so version 1 reads NULL here.
CASE WHEN type_version >= 2 THEN CAST(nullif(d.effective_at, '') AS TIMESTAMPTZ) END
