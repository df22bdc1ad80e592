"""MCP (DESIGN.md section 8): sessions to upstream servers (sessions.py), resolving their secret references
when connecting (secrets.py), syncing a server's tools into the catalog (sync.py). The official `mcp` SDK
and anyio are imported inside these modules' functions' callers only: importing this package is cheap."""
