"""The composition roots besides the CLI: where tap's adapters are put together.

- `runtime`: config → adapters (embedder, store) → the core services (`open_runtime`, `Runtime`);
- `server`: `tap serve`: the runtime, the aiohttp web app (proxy.web_app) and the bridges in one
  running server, started and stopped cleanly;
- `hook_endpoint`: the agent-hook endpoint inside `tap serve`;
- `mcp_service`: the MCP tools on `/mcp` inside `tap serve`; `mcp_stdio`: `tap mcp`, the stdio server;
- `hooks`: the agent hooks over the real store and pipeline when no server runs (`tap hook`);
- `mitm`: the mitmproxy way in over the real interceptor, inside `tap serve` or on its own;
- `cli_reads`: the CLI's reads without a server, from the store's read view (else the store).

Only this package and tap.cli import adapters (docs/architecture.md, Layers and composition roots).
"""
