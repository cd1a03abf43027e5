"""Turns are prepared and cut into overlapping windows with stable ids."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tap.ingest.chunker import (
    TRUNCATION_MARK,
    Chunk,
    Turn,
    chunk_turns,
    prepare_turns,
    render_chunk,
    render_turn,
    turn_id,
)
from tap.records import Message
from tap.tokens import count_tokens

MAY_8 = datetime(2023, 5, 8, 14, 0, tzinfo=UTC).timestamp()

SENTENCES = [
    "I adopted a grey whippet called Biscuit from the shelter in Leith.",
    "She sleeps most of the day and sprints like mad on the beach at Portobello.",
    "My sister Ines thinks she needs a second dog to keep her company.",
    "We walk along the Water of Leith every morning before work at seven.",
    "The vet says she is healthy but should gain about two kilos over winter.",
    "Next month we are driving to the Highlands for a week of hiking.",
]


def make_turns(count: int) -> list[Turn]:
    """A made-up two-person conversation of `count` turns, about 20 tokens each."""
    return [
        Turn(
            id=f"D1:{i + 1}",
            role="user" if i % 2 == 0 else "assistant",
            speaker="Ana" if i % 2 == 0 else "Ben",
            text=f"{SENTENCES[i % len(SENTENCES)]} ({i})",
            timestamp=MAY_8,
        )
        for i in range(count)
    ]


def chunk(turns: list[Turn], **kwargs: int) -> list[Chunk]:
    return chunk_turns(turns, scope="ana", conversation="conv-1", source="proxy", **kwargs)


class TestPrepareTurns:
    def test_keeps_user_and_assistant_text_only(self) -> None:
        messages = [
            Message(role="system", content="You are terse."),
            Message(role="user", content="I live in Leith.", name="Ana", id="u1", timestamp=MAY_8),
            Message(role="tool", content='{"weather": "rain"}'),
            Message(role="assistant", content="Noted!", id="a1"),
            Message(role="function", content="ignored"),
        ]
        turns = prepare_turns(messages, conversation="c")
        assert [(t.id, t.role, t.speaker, t.text) for t in turns] == [
            ("u1", "user", "Ana", "I live in Leith."),
            ("a1", "assistant", "Assistant", "Noted!"),
        ]
        assert turns[0].timestamp == MAY_8

    def test_scrubs_and_drops_empty_turns(self) -> None:
        messages = [
            Message(role="user", content="  "),
            Message(role="user", content="<private>my diagnosis</private>"),
            Message(role="user", content="key sk-ant-api03-Xy7vQ2mN9pL4kR8sT1uW6zA3 <private>x</private>"),
        ]
        turns = prepare_turns(messages)
        assert [t.text for t in turns] == ["key [REDACTED]"]
        assert turns[0].speaker == "User"

    def test_missing_ids_are_deterministic_hashes(self) -> None:
        messages = [Message(role="user", content="hello there"), Message(role="assistant", content="hi")]
        first = prepare_turns(messages, conversation="c1")
        again = prepare_turns(messages, conversation="c1")
        other = prepare_turns(messages, conversation="c2")
        assert [t.id for t in first] == [t.id for t in again]
        assert first[0].id == turn_id("c1", 0, "hello there")
        assert first[0].id.startswith("t_") and first[0].id != first[1].id
        assert first[0].id != other[0].id


class TestChunkTurns:
    def test_windows_overlap_by_whole_turns(self) -> None:
        turns = make_turns(30)
        chunks = chunk(turns, chunk_tokens=120, overlap_tokens=40)
        assert len(chunks) > 3
        for before, after in zip(chunks, chunks[1:], strict=False):
            shared = [t for t in before.turns if t in after.turns]
            assert shared, "consecutive chunks share their boundary turns"
            assert shared == before.turns[-len(shared) :] == after.turns[: len(shared)]
            assert sum(count_tokens(render_turn(t)) + 1 for t in shared) <= 40
            assert len(after.turns) > len(shared), "every window brings new turns"

    def test_every_turn_is_covered_in_order(self) -> None:
        turns = make_turns(30)
        chunks = chunk(turns, chunk_tokens=120, overlap_tokens=40)
        seen: list[Turn] = []
        for piece in chunks:
            seen += [t for t in piece.turns if t not in seen]
        assert seen == turns

    def test_chunks_stay_within_budget_and_report_tokens(self) -> None:
        chunks = chunk(make_turns(30), chunk_tokens=120, overlap_tokens=40)
        for piece in chunks:
            assert piece.tokens == count_tokens(render_chunk(piece))
            assert piece.tokens <= 120

    def test_zero_overlap_partitions_the_turns(self) -> None:
        turns = make_turns(12)
        chunks = chunk(turns, chunk_tokens=100, overlap_tokens=0)
        assert [t for piece in chunks for t in piece.turns] == turns

    def test_short_conversation_is_one_chunk(self) -> None:
        turns = make_turns(3)
        [only] = chunk(turns)
        assert only.turns == turns
        assert (only.scope, only.conversation, only.source) == ("ana", "conv-1", "proxy")

    def test_no_turns_no_chunks(self) -> None:
        assert chunk([]) == []

    def test_chunk_ids_are_deterministic(self) -> None:
        turns = make_turns(20)
        first = [c.id for c in chunk(turns, chunk_tokens=120, overlap_tokens=40)]
        again = [c.id for c in chunk(list(turns), chunk_tokens=120, overlap_tokens=40)]
        assert first == again
        assert len(set(first)) == len(first)

    def test_chunk_id_depends_on_scope_conversation_and_text(self) -> None:
        turns = make_turns(2)
        [base] = chunk(turns)
        [scoped] = chunk_turns(turns, scope="ben", conversation="conv-1", source="proxy")
        [other_conv] = chunk_turns(turns, scope="ana", conversation="conv-2", source="proxy")
        edited = [turns[0], Turn(id="D1:2", role="assistant", speaker="Ben", text="changed", timestamp=MAY_8)]
        [changed] = chunk(edited)
        [other_source] = chunk_turns(turns, scope="ana", conversation="conv-1", source="telegram")
        assert len({base.id, scoped.id, other_conv.id, changed.id}) == 4
        assert other_source.id == base.id, "re-delivery through another source is the same exchange"

    def test_oversized_turn_gets_its_own_truncated_chunk(self) -> None:
        turns = make_turns(4)
        huge = Turn(id="D1:99", role="user", speaker="Ana", text="word " * 3000, timestamp=MAY_8)
        chunks = chunk([*turns[:2], huge, *turns[2:]], chunk_tokens=100, overlap_tokens=30)
        alone = [piece for piece in chunks if any(t.id == "D1:99" for t in piece.turns)]
        assert len(alone) == 1 and len(alone[0].turns) == 1
        text = alone[0].turns[0].text
        assert text.endswith(TRUNCATION_MARK)
        assert 300 < alone[0].tokens <= 400  # cut to the hard cap of 4 x chunk_tokens
        assert [t.id for piece in chunks for t in piece.turns].count("D1:99") == 1

    def test_turn_between_budget_and_cap_is_kept_whole(self) -> None:
        big = Turn(id="D1:1", role="user", speaker="Ana", text="word " * 150, timestamp=MAY_8)
        [piece] = chunk([big], chunk_tokens=100, overlap_tokens=30)
        assert piece.turns[0].text == big.text
        assert TRUNCATION_MARK not in render_chunk(piece)

    @pytest.mark.parametrize(("size", "overlap"), [(0, 0), (100, 100), (100, -1)])
    def test_rejects_bad_sizes(self, size: int, overlap: int) -> None:
        with pytest.raises(ValueError):
            chunk(make_turns(2), chunk_tokens=size, overlap_tokens=overlap)


def test_render_chunk_labels_turns_with_ids_and_dates() -> None:
    turns = [
        Turn(id="D1:3", role="user", speaker="Caroline", text="I went to a support group.", timestamp=MAY_8),
        Turn(id="D1:4", role="assistant", speaker="Melanie", text="Wow!", timestamp=0.0),
    ]
    [piece] = chunk(turns)
    assert render_chunk(piece) == ("[D1:3] Caroline (2023-05-08): I went to a support group.\n[D1:4] Melanie: Wow!")
