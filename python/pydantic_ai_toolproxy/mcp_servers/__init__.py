"""MCP servers: the servers of an `mcpServers` file as group sources (internal; named `mcp_servers`, not `mcp`, so
it is not read as the MCP SDK). The public names are `ToolProxyCapability.from_mcp_config` and `mcp_listing_cache`.

- `config`: `from_mcp_config`: an `mcpServers` file as one group per server (`mcp_groups`), their descriptions;
- `toolset`: `MCPServerToolset`, one server as a group's source: start, lazy start from a cached listing;
- `pool`: `ServerPool`, the servers' processes kept across runs (idle stop, loop end, exit, SIGTERM, retries);
- `process`: a stdio server's transport (its stderr file) and its first listing;
- `describe`: a server's group description from what it says about itself, as plain text;
- `noise`: a server's non-JSON stdout lines, kept out of the host's stderr;
- `watch`: stopping a server process by PID, and the thread that does it for servers whose loop no longer runs;
- `listing_io`: the listing cache's bounded reads and writes, off the event loop;
- `live_listing`: what a live start listed, kept in the listing cache and as the group description.
"""
