-- Point lookups of one subject's effective set (the most frequent read) use an index instead of a scan.
CREATE INDEX effective_tools_subject ON effective_tools (subject_kind, subject);
