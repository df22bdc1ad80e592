"""The MCP gateway (issue 34): each agent gets exactly its effective tool set over MCP, live, with every
decision on record.

- `source.py`: the seam between the MCP endpoint and where its sets come from (`SetSource`), with the pure
  rules every source shares (how a name resolves, the route decision, the annotations of a tool).
- `read_model.py`: the source of `toolcat serve` (and `toolcat gateway --stdio`), over the server's DuckDB
  read model, kept in memory and refreshed per batch.
"""
