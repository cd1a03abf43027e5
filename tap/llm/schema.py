"""The structured output of the gate, extractor and reconciler: JSON schemas and strict parsing.

Every provider (store.llm: Anthropic, Ollama, OpenAI-compatible) asks for the same shapes (a
tool's `input_schema`, Ollama's chat `format`, OpenAI's `response_format` or a function's
parameters), and hands the model's JSON object to the `parse_*` functions here, which decode it
with `msgspec.convert(strict=True)` into wire Structs and then check what a schema cannot: that
cited turn ids are turns of the chunk, cited memory ids are memories the model was shown, and the
annotations of a memory fit together.

A memory carries, besides its statement, what reconcile (tap.extract.reconcile.decide) reads from
a `CandidateMemory`, the same for the rules and for a model: whom it is about (`holder`), the
single-valued attribute it states and its value (`attribute` / `part` / `value` → the slot), a
stated change (`change` → the tag "update" or "now"), what it takes back (`retracts`), a
correction (`wrong_value` → `right_value`), a death (`died_name` / `died_relation`), a goal
reached (`goal_reached`), a thing given a new date or amount or called off (`new_value_of`), and
the day an event happened (`happened_on`).

Invariants:
- a parse either returns a complete result or raises `ValueError` whose message names the field
  (`$.memories[1].importance`, `memories[0].value`, `decisions[0].target`) and what was wrong;
  nothing half-parsed;
- no type coercion ("3" is not an importance); unknown extra fields are ignored; an annotation the
  model leaves out is empty (older answers without them stay valid);
- annotations fit together or the answer is refused: a value needs an attribute and a holder (and
  the reverse), a part needs an attribute, a correction needs both values and two different ones,
  `happened_on` is a real `YYYY-MM-DD` date; holders, attributes and values are lower-cased and
  single-spaced, and a holder never holds the slot separator "|";
- every `CandidateMemory` cites at least one turn of its chunk, and its `valid_from` is the latest
  timestamp among the cited turns (when the statement was made), except a plain event (no slot,
  nothing it ends) whose `happened_on` is earlier: then that day. Whatever ends or replaces
  something is dated when it was said, as the rules date theirs: "I moved to Ljubljana in March",
  said in June, is newer than "I live in Aarhus" said in May;
- `parse_decisions` returns exactly one `Decision` per candidate, in candidate order.
Schemas are built per call so enums can list the chunk's own turn ids and the shown memory ids
(Ollama's and llama.cpp's grammars then cannot produce another id; Anthropic treats them as strong
hints). They list every property as required and forbid others, the subset OpenAI's strict
structured outputs accept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, time
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
CHANGES: tuple[str, ...] = ("", "update", "now")
Text = Annotated[str, msgspec.Meta(pattern=r"\S")]  # at least one non-space character
Word = Annotated[str, msgspec.Meta(max_length=80)]  # an annotation: a name, a noun phrase, a value


class _GateWire(msgspec.Struct):
    worth: bool
    reason: str


class _MemoryWire(msgspec.Struct):
    content: Text
    kind: ExtractKind
    importance: Annotated[int, msgspec.Meta(ge=1, le=5)]
    turn_ids: Annotated[list[str], msgspec.Meta(min_length=1)]
    tags: list[str] = msgspec.field(default_factory=list)
    holder: Word = ""
    attribute: Word = ""
    part: Word = ""
    value: Word = ""
    change: Literal["", "update", "now"] = ""
    retracts: Annotated[list[Word], msgspec.Meta(max_length=6)] = msgspec.field(default_factory=list)
    wrong_value: Word = ""
    right_value: Word = ""
    died_name: Word = ""
    died_relation: Word = ""
    goal_reached: Word = ""
    new_value_of: Word = ""
    happened_on: Word = ""


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
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


def _text(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


ANNOTATIONS: dict[str, dict[str, Any]] = {
    "holder": _text('whom it is about: "user", "team", "<holder>:<relation>" (user:sister), or a name'),
    "attribute": _text('the single-valued attribute it states ("residence", "employer", "editor"), else ""'),
    "part": _text('the part of the team\'s work the attribute is about ("backend"), else ""'),
    "value": _text('the attribute\'s value now, short ("ljubljana", "postgres"), else ""'),
    "change": {"type": "string", "enum": list(CHANGES), "description": "update: says it changed; now: a weaker now"},
    "retracts": {
        "type": "array",
        "items": {"type": "string"},
        "maxItems": 6,
        "description": "key words (names, nouns) of an earlier statement this one takes back",
    },
    "wrong_value": _text("a value said wrong before, exactly as written, that this statement corrects"),
    "right_value": _text("the value that replaces wrong_value"),
    "died_name": _text("the name of a person or animal whose death it reports"),
    "died_relation": _text('who they were to the holder ("dad", "cat")'),
    "goal_reached": _text('the head noun of a goal it reports reached ("flat", "job")'),
    "new_value_of": _text("the thing it gives a new date or amount, or calls off (head noun last)"),
    "happened_on": _text('for an event: the day it happened, YYYY-MM-DD, when the excerpt says; else ""'),
}
"""What reconcile reads besides the statement (the module docstring); every one may be empty."""


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
            **ANNOTATIONS,
        },
        ["content", "kind", "importance", "tags", "turn_ids", *ANNOTATIONS],
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
    """Candidate memories from the model's object, every cited turn checked against the chunk and
    the annotations against each other (the module docstring)."""
    wire = _convert(raw, _MemoriesWire)
    known = {turn.id: turn.timestamp for turn in chunk.turns}
    found: list[CandidateMemory] = []
    for index, memory in enumerate(wire.memories):
        ids = _clean_ids(index, memory.turn_ids, known)
        said = max(known[turn] for turn in ids)
        found.append(_candidate(f"memories[{index}]", memory, ids, said))
    return merge_duplicates(found)


def _candidate(where: str, memory: _MemoryWire, ids: list[str], said: float) -> CandidateMemory:
    """One checked memory as reconcile reads it; ValueError naming the field that does not fit."""
    holder, attribute, part, value = (
        _holder(f"{where}.holder", memory.holder),
        _phrase(memory.attribute),
        _phrase(memory.part),
        _phrase(memory.value),
    )
    if "|" in attribute:
        raise ValueError(f"{where}.attribute: {memory.attribute!r} must not contain '|'")
    if attribute and not value:
        raise ValueError(f"{where}.value: attribute {attribute!r} needs its value")
    if value and not attribute:
        raise ValueError(f"{where}.attribute: value {value!r} needs the attribute it is the value of")
    if part and not attribute:
        raise ValueError(f"{where}.attribute: part {part!r} needs the attribute it is about")
    if attribute and not holder:
        raise ValueError(f"{where}.holder: attribute {attribute!r} needs whom it is about")
    wrong, right = " ".join(memory.wrong_value.split()), " ".join(memory.right_value.split())
    if bool(wrong) != bool(right):
        raise ValueError(f"{where}.{'right_value' if wrong else 'wrong_value'}: a correction needs both values")
    if wrong and wrong.lower() == right.lower():
        raise ValueError(f"{where}.right_value: {right!r} is the value it corrects")
    deceased = [_phrase(memory.died_name), _phrase(memory.died_relation)]
    retracts = list(dict.fromkeys(word for entry in memory.retracts for word in _phrase(entry).split()))
    candidate = CandidateMemory(
        content=" ".join(memory.content.split()),
        kind=memory.kind,
        importance=memory.importance,
        tags=_clean_tags([*memory.tags, memory.change]),
        turn_ids=ids,
        valid_from=said,
        slot=f"{holder}|{attribute}" if attribute else "",
        slot_part=part if attribute else "",
        slot_value=value,
        retracts=retracts,
        correction=[wrong, right] if wrong else [],
        holder=holder,
        deceased=deceased if any(deceased) else [],
        fulfils=_phrase(memory.goal_reached),
        new_value=_phrase(memory.new_value_of),
    )
    day = _day(f"{where}.happened_on", memory.happened_on)
    if day is not None and _plain_event(candidate):
        happened = datetime.combine(day, time(), tzinfo=UTC).timestamp()
        if happened < said and day != datetime.fromtimestamp(said, UTC).date():
            candidate = msgspec.structs.replace(candidate, valid_from=happened)
    return candidate


def _plain_event(candidate: CandidateMemory) -> bool:
    """An event that ends or replaces nothing: dated when it happened, not when it was told."""
    ends = candidate.slot or candidate.retracts or candidate.correction or candidate.deceased
    return candidate.kind == "event" and not (ends or candidate.fulfils or candidate.new_value)


_EDGE = " \t\n.,;:!?\"'`“”‘’()[]{}"


def _phrase(text: str) -> str:
    """An annotation as reconcile compares it: lower case, single spaces, no quotes or end punctuation."""
    return " ".join(text.lower().split()).strip(_EDGE)


_POSSESSIVE = re.compile(r"^(\S+?)(?:'s|’s)\s+(.+)$")


def _holder(where: str, text: str) -> str:
    """A holder in the form the rules write it: "the user" is "user", "user's sister" is "user:sister"."""
    holder = _phrase(text).removeprefix("the ")
    if "|" in holder:
        raise ValueError(f"{where}: {text!r} must not contain '|'")
    possessive = _POSSESSIVE.match(holder)
    if possessive and ":" not in holder:
        holder = f"{possessive.group(1)}:{possessive.group(2)}"
    return holder


_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _day(where: str, text: str) -> date | None:
    """The date of `happened_on`, None when empty; ValueError for anything but a real YYYY-MM-DD."""
    text = text.strip()
    if not text:
        return None
    if not _DAY.match(text):
        raise ValueError(f"{where}: {text!r} is not a YYYY-MM-DD date")
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(f"{where}: {text!r} is not a date ({exc})") from exc


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
