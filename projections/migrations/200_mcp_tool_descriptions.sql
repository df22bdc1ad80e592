-- What agents see of each synced MCP tool through the gateway's tools/list, as the server listed it at the
-- sync (McpServer.Synced version 2): its title, output schema and annotations. NULL when the server gave
-- none, and for every version recorded before this migration (version 1 of the event held none of them).
ALTER TABLE mcp_tool_history ADD COLUMN title VARCHAR;
ALTER TABLE mcp_tool_history ADD COLUMN output_schema JSON;  -- a JSON Schema of the tool's structuredContent
ALTER TABLE mcp_tool_history ADD COLUMN annotations JSON;    -- MCP's hints: {"readOnlyHint": true, ...}
CREATE OR REPLACE VIEW mcp_tools AS
SELECT * EXCLUDE (valid_to, valid_to_time) FROM mcp_tool_history WHERE valid_to IS NULL;
