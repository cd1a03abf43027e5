"""The tools answered in this process, by tap.memories.agent.AgentMemory.

`open_agent` gives the AgentMemory for one call (in `tap serve` the server's own; in a `tap mcp`
process without a server, one over the embedded store, opened for the call and closed after it,
so the data dir is held only while a call runs); `scope` names the scope the call runs in (read in
the calling task: `tap serve` learns it per HTTP request). The work runs in a worker thread (the
store blocks). What the model should read (bad input, the store down) becomes ToolCallError.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from bridges.mcp.tools import ToolCallError
from tap.errors import TapError
from tap.memories.agent import AgentMemory, ToolInputError

_METHODS = {
    "search_memories": "search",
    "remember": "remember",
    "forget": "forget",
    "recent_memories": "recent",
    "why": "why",
}


class LocalTools:
    """A ToolBackend over AgentMemory in this process."""

    def __init__(self, open_agent: Callable[[], AbstractContextManager[AgentMemory]], scope: Callable[[], str]) -> None:
        self._open_agent = open_agent
        self._scope = scope

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """The tool's answer (see the module docstring)."""
        method = _METHODS.get(tool)
        if method is None:
            raise ToolCallError(f"unknown tool {tool!r}")
        return await asyncio.to_thread(self._run, method, self._scope(), arguments)

    def _run(self, method: str, scope: str, arguments: dict[str, Any]) -> str:
        try:
            with self._open_agent() as agent:
                answer: str = getattr(agent, method)(scope, **arguments)
                return answer
        except ToolInputError as exc:
            raise ToolCallError(str(exc)) from None
        except TapError as exc:  # the store or the embedder down, the data dir busy: nothing was done
            raise ToolCallError(f"tap could not answer: {exc}") from None
        except TypeError as exc:  # arguments of another version's schema (through a relay)
            raise ToolCallError(f"unexpected arguments: {exc}") from None
