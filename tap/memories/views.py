"""JSON views shared by the CLI (`--json`) and the admin API, so both print the same shapes."""

from __future__ import annotations

from typing import Any

import msgspec

from tap.records import Memory, RecallResult


def memory_view(memory: Memory) -> dict[str, Any]:
    """A memory as plain JSON-able builtins: every field of the record, and `archived` (bool)."""
    view: dict[str, Any] = msgspec.to_builtins(memory)
    view["archived"] = memory.archived
    return view


def recall_view(result: RecallResult) -> dict[str, Any]:
    """`{"block", "tokens", "elapsed_ms", "memories": [{"id", "content", "score", "sources", ...}]}`."""
    return {
        "block": result.block,
        "tokens": result.tokens,
        "elapsed_ms": round(result.elapsed_ms, 3),
        "memories": [
            {
                "id": r.memory.id,
                "content": r.memory.content,
                "score": r.score,
                "tokens": r.tokens,
                "kind": r.memory.kind,
                "importance": r.memory.importance,
                "scope": r.memory.scope,
                "conversation": r.memory.conversation,
                "sources": r.memory.sources,
                "valid_from": r.memory.valid_from,
            }
            for r in result.memories
        ],
    }


def search_view(results: list[tuple[Memory, float]]) -> list[dict[str, Any]]:
    """Search results as `[{"score", "memory"}]`."""
    return [{"score": round(score, 6), "memory": memory_view(m)} for m, score in results]
