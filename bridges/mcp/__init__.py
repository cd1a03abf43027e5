"""MCP: tap's memory as tools an agent calls (docs/mcp.md), over stdio (`tap mcp`) and streamable
HTTP (`/mcp` on `tap serve`), with the official `mcp` SDK.

- `tools`: the five tools (names, descriptions, input schemas) over a `ToolBackend`;
- `local`: a backend that answers with tap.memories.agent.AgentMemory in this process;
- `relay`: a backend that forwards each call to the running `tap serve`'s `/mcp`;
- `http`: the SDK's streamable HTTP handler (stateless, JSON answers) for `tap serve`;
- `install`: tap's entry in Claude Code's and Codex's MCP server settings (no SDK import).

This `__init__` imports nothing: `install` is used by `tap hooks install`, which must not pay for
the SDK.
"""
