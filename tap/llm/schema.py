"""The structured output of the gate, extractor and reconciler: JSON schemas and strict parsing.

Both providers (store.llm.anthropic_provider, store.llm.ollama_provider) ask for the same shapes (Anthropic as a
tool's `input_schema`, Ollama as the chat `format`), and both hand the model's JSON object to the
`parse_*` functions here, which decode it with `msgspec.convert(strict=True)` into wire Structs and
then check what a schema cannot: that cited turn ids are turns of the chunk and cited memory ids
are memories the model was shown.

Invariants:
- a parse either returns a complete result or raises `ValueError` whose message names the field
  (`$.memories[1].importance`, `decisions[0].target`) and what was wrong; nothing half-parsed;
- no type coercion ("3" is not an importance); unknown extra fields are ignored;
- every `CandidateMemory` cites at least one turn of its chunk, and its `valid_from` is the latest
  timestamp among the cited turns (when the statement was made);
- `parse_decisions` returns exactly one `Decision` per candidate, in candidate order.
Schemas are built per call so enums can list the chunk's own turn ids and the shown memory ids
(Ollama's grammar then cannot produce another id; Anthropic treats them as strong hints).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec

from tap.candidates import CandidateMemory, merge_duplicates
from tap.ingest.chunker import Chunk
from tap.llm.contract import Action, Decision, GateVerdict
from tap.records import Memory

__all__ = [
    "EXTRACT_KINDS",
    "decisions_schema",
    "gate_schema",
    "memories_schema",
    "parse_decisions",
    "parse_gate",
    "parse_memories",
]

ExtractKind = Literal["fact", "preference", "decision", "event", "instruction", "plan"]
EXTRACT_KINDS: tuple[str, ...] = ("fact", "preference", "decision", "event", "instruction", "plan")
ACTIONS: tuple[str, ...] = ("add", "update", "supersede", "noop", "conflict")
Text = Annotated[str, msgspec.Meta(pattern=r"\S")]  # at least one non-space character


class _GateWire(msgspec.Struct):
    worth: bool
    reason: str


class _MemoryWire(msgspec.Struct):
    content: Text
    kind: ExtractKind
    importance: Annotated[int, msgspec.Meta(ge=1, le=5)]
    turn_ids: Annotated[list[str], msgspec.Meta(min_length=1)]
    tags: list[str] = msgspec.field(default_factory=list)


class _MemoriesWire(msgspec.Struct):
    memories: list[_MemoryWire]


class _DecisionWire(msgspec.Struct):
    candidate: int
    action: Action
    target: str = ""
    content: str = ""


class _DecisionsWire(msgspec.Struct):
    decisions: list[_DecisionWire]


# --- schemas -----------------------------------------------------------------------------------


def _object(properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


def gate_schema() -> dict[str, Any]:
    """The gate_verdict object: {worth, reason}."""
    return _object(
        {
            "worth": {"type": "boolean", "description": "true if anything is worth remembering"},
            "reason": {"type": "string", "description": "one sentence: what is (not) worth keeping"},
        },
        ["worth", "reason"],
    )


def memories_schema(turn_ids: Sequence[str]) -> dict[str, Any]:
    """The record_memories object: {memories: [...]}, turn ids limited to the chunk's."""
    memory = _object(
        {
            "content": {"type": "string", "description": "one self-contained statement"},
            "kind": {"type": "string", "enum": list(EXTRACT_KINDS)},
            "importance": {"type": "integer", "minimum": 1, "maximum": 5},
            "tags": {"type": "array", "items": {"type": "string"}},
            "turn_ids": {
                "type": "array",
                "items": {"type": "string", "enum": list(turn_ids)},
                "minItems": 1,
                "description": "ids of the supporting turns, copied from the excerpt",
            },
        },
        ["content", "kind", "importance", "tags", "turn_ids"],
    )
    return _object({"memories": {"type": "array", "items": memory}}, ["memories"])


def decisions_schema(count: int, memory_ids: Sequence[str]) -> dict[str, Any]:
    """The reconcile_memories object: {decisions: [...]}, one per candidate 0..count-1."""
    decision = _object(
        {
            "candidate": {"type": "integer", "minimum": 0, "maximum": max(0, count - 1)},
            "action": {"type": "string", "enum": list(ACTIONS)},
            "target": {"type": "string", "enum": ["", *memory_ids]},
            "content": {"type": "string", "description": "merged statement for update/supersede"},
        },
        ["candidate", "action", "target", "content"],
    )
    return _object({"decisions": {"type": "array", "items": decision}}, ["decisions"])


# --- parsing -------------------------------------------------------------------------------------


def _convert[T](raw: object, kind: type[T]) -> T:
    """Strict decode of the model's object; ValueError names the offending JSON path."""
    try:
        return msgspec.convert(raw, kind, strict=True)
    except msgspec.ValidationError as exc:
        raise ValueError(str(exc).replace("`", "")) from exc


def parse_gate(raw: object) -> GateVerdict:
    """The gate's verdict from the model's object."""
    wire = _convert(raw, _GateWire)
    return GateVerdict(worth=wire.worth, reason=" ".join(wire.reason.split()))


def _clean_ids(index: int, cited: Sequence[str], known: dict[str, float]) -> list[str]:
    """Cited turn ids, deduplicated, '[id]' tolerated; ValueError for an id not in the chunk."""
    ids: list[str] = []
    for raw in cited:
        turn = raw.strip()
        turn = turn[1:-1] if turn.startswith("[") and turn.endswith("]") else turn
        if turn not in known:
            raise ValueError(f"memories[{index}].turn_ids: {raw!r} is not a turn of this chunk")
        if turn not in ids:
            ids.append(turn)
    return ids


def _clean_tags(tags: Sequence[str]) -> list[str]:
    out: list[str] = []
    for tag in tags:
        clean = " ".join(tag.split()).lower()
        if clean and clean not in out:
            out.append(clean)
    return out


def parse_memories(raw: object, chunk: Chunk) -> list[CandidateMemory]:
    """Candidate memories from the model's object, every cited turn checked against the chunk."""
    wire = _convert(raw, _MemoriesWire)
    known = {turn.id: turn.timestamp for turn in chunk.turns}
    found: list[CandidateMemory] = []
    for index, memory in enumerate(wire.memories):
        ids = _clean_ids(index, memory.turn_ids, known)
        found.append(
            CandidateMemory(
                content=" ".join(memory.content.split()),
                kind=memory.kind,
                importance=memory.importance,
                tags=_clean_tags(memory.tags),
                turn_ids=ids,
                valid_from=max(known[turn] for turn in ids),
            )
        )
    return merge_duplicates(found)


def _check_decision(where: str, wire: _DecisionWire, shown: set[str]) -> None:
    """ValueError when the target does not fit the action or was not shown for this candidate."""
    if wire.action == "add" and wire.target:
        raise ValueError(f"{where}.target: an add must not name a target, got {wire.target!r}")
    if wire.action in ("update", "supersede", "conflict") and not wire.target:
        raise ValueError(f"{where}.target: {wire.action} needs the id of the memory it replaces")
    if wire.target and wire.target not in shown:
        raise ValueError(f"{where}.target: {wire.target!r} is not a memory shown for this candidate")


def parse_decisions(
    raw: object, candidates: Sequence[CandidateMemory], similar: Sequence[Sequence[Memory]]
) -> list[Decision]:
    """Exactly one decision per candidate, in candidate order, targets checked."""
    wire = _convert(raw, _DecisionsWire)
    chosen: dict[int, Decision] = {}
    for index, item in enumerate(wire.decisions):
        where = f"decisions[{index}]"
        if not 0 <= item.candidate < len(candidates):
            raise ValueError(f"{where}.candidate: {item.candidate} is not a candidate number")
        if item.candidate in chosen:
            raise ValueError(f"{where}.candidate: candidate {item.candidate} has two decisions")
        _check_decision(where, item, {memory.id for memory in similar[item.candidate]})
        content = " ".join(item.content.split()) if item.action in ("update", "supersede") else ""
        chosen[item.candidate] = Decision(
            action=item.action, candidate=item.candidate, target=item.target, content=content
        )
    missing = [index for index in range(len(candidates)) if index not in chosen]
    if missing:
        raise ValueError(f"decisions: no decision for candidates {missing}")
    return [chosen[index] for index in range(len(candidates))]
