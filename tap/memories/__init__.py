"""The memories as a user sees them: the operations on them, their history and their conflicts.

- `service`: `MemoryService`, the user-facing operations (CLI, admin API, bridges): list, search,
  add, edit, forget, export, import, archive; history is never destroyed;
- `history`: every version of a memory and the turns each came from;
- `conflicts`: contradictions tap cannot settle, kept both and shown with their dates;
- `views`: the JSON shapes the CLI and the admin API share;
- `agent` (+ `agent_text`): the operations an agent calls as MCP tools, answered in compact text.
"""
