-- The effective sets of the subjects in `_subjects`, as of $at (and $effective_at): rows of effective_tools.
{{effective_set}}
SELECT * FROM winners
