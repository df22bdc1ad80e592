-- Each subject's current effective set as the exact JSON rows `toolcat effective` answers, maintained with
-- effective_tools: the most frequent read becomes a lookup in a table of subjects, not of (subject, tool).
CREATE TABLE effective_documents (
    subject VARCHAR NOT NULL,  -- key; unit:NAME or agent:NAME
    tools   JSON    NOT NULL   -- [{"tool_id", "namespace", "description", "provenance", "inherited_from", "exposure"}]
);
