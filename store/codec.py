"""Memory ↔ flat Chroma metadata (str/int/float/bool only), in one place.

Lists (tags, sources, conflicts_with, merged_from) are stored as JSON strings; `active` is derived
from `superseded_by` and `archived_at` (tap.records.Memory.active) and stored so that searches can
filter on it: neither a superseded nor an archived memory is ever found by a search. The content
itself is the Chroma document.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tap.records import Memory

_FIELDS = [f for f in Memory.__struct_fields__ if f not in ("id", "content")]
_LISTS = ("tags", "sources", "conflicts_with", "merged_from")


def to_metadata(memory: Memory) -> dict[str, str | int | float | bool]:
    """Flatten a memory's fields (all but id and content) into Chroma metadata."""
    raw = msgspec.structs.asdict(memory)
    meta: dict[str, str | int | float | bool] = {}
    for name in _FIELDS:
        value = raw[name]
        meta[name] = msgspec.json.encode(value).decode() if name in _LISTS else value
    meta["active"] = memory.active
    return meta


def from_metadata(memory_id: str, content: str, meta: dict[str, Any]) -> Memory:
    """Rebuild a memory from what Chroma returned."""
    fields = {name: meta[name] for name in _FIELDS if name in meta}
    for name in _LISTS:
        if isinstance(fields.get(name), str):
            fields[name] = msgspec.json.decode(fields[name])
    return msgspec.convert({"id": memory_id, "content": content, **fields}, Memory, strict=False)
