"""Packing the block (tap.recall.engine.pack_block): a pure function, so it is tried on many random blocks.

The count a block reports is what the packer added up line by line and heading by heading, not a
second count of the rendered block: these tests hold the two equal for every kind of line (
statements and excerpts, cut to the question or whole, lists, speaker labels, digits, non-ASCII
text, conflict and outdated marks, days across years, undated memories), and the block within
its budget.
"""

from __future__ import annotations

import random

import pytest

from tap.near_duplicate import repeats
from tap.recall.engine import OVER_BUDGET, REPEAT, pack, pack_block
from tap.records import ACKNOWLEDGEMENT_TAG, OUTDATED_TAG, QUESTION_TAG, Memory, make_memory
from tap.tokens import count_tokens

DAY = 86400.0
NOW = 1_800_000_000.0
WORDS = (
    "Ann visited the museum in Lisbon with her dad and liked the tiles; flight LH1234 leaves at 07:45, "
    "café crème costs €3.50 — 東京 trip booked 🎉 hotel Marquês 2 nights, budget 1,250 dollars"
).split()


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 14))) + rng.choice([".", "!", "?", ":"])


def _content(rng: random.Random, excerpt: bool) -> str:
    if not excerpt:
        return " ".join(_sentence(rng) for _ in range(rng.randint(1, 2)))
    label = rng.choice(["", "User: ", "Assistant: ", "Maria Lopes: "])
    if rng.random() < 0.2:  # a list: always shown whole
        return label + "Here are some: " + " ".join(f"{n}. {_sentence(rng)}" for n in range(1, rng.randint(3, 6)))
    return label + " ".join(_sentence(rng) for _ in range(rng.randint(1, 6)))


def _memory(rng: random.Random, others: list[Memory]) -> Memory:
    excerpt = rng.random() < 0.5
    when = rng.choice([NOW - rng.randint(0, 900) * DAY, NOW - rng.randint(0, 3) * DAY, 1e300])  # 1e300: undated
    memory = make_memory(
        scope="ann",
        content=_content(rng, excerpt),
        kind="episode" if excerpt else "fact",
        tags=[OUTDATED_TAG] if rng.random() < 0.15 else [],
        sources=[f"t{rng.randint(1, 30)}"],
        valid_from=when,
        now=NOW,
    )
    if others and rng.random() < 0.1:
        memory.conflicts_with = [rng.choice(others).id]
    return memory


@pytest.mark.parametrize("seed", range(40))
def test_the_count_is_the_blocks_and_within_the_budget(seed: int) -> None:
    rng = random.Random(seed)
    memories: list[Memory] = []
    for _ in range(rng.randint(1, 60)):
        memories.append(_memory(rng, memories))
    ranked = [(m, 1.0 / (rank + 1)) for rank, m in enumerate(memories)]
    query = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 6)))
    for budget in (40, 90, 200, 500, 900):
        result = pack_block(ranked, budget, query=query)
        if not result.memories:
            assert (result.block, result.tokens) == ("", 0)
            continue
        assert result.tokens == count_tokens(result.block), f"budget {budget}"
        assert result.tokens <= budget


@pytest.mark.parametrize("seed", range(20))
def test_every_memory_left_out_says_why(seed: int) -> None:
    """Each memory of the ranking is in the block or has its reason (what `tap why` shows): a
    repeat only where a line with the same words (an excerpt: nearly the same) is in the block,
    over-budget otherwise."""
    rng = random.Random(seed)
    memories: list[Memory] = []
    for _ in range(rng.randint(1, 40)):
        memories.append(_memory(rng, memories))
    memories += [make_memory(scope="ann", content=m.content, kind=m.kind, now=NOW) for m in memories[:5]]  # twice
    ranked = [(m, 1.0 / (rank + 1)) for rank, m in enumerate(memories)]
    for budget in (40, 200, 900):
        result, left_out = pack(ranked, budget)
        placed = {r.memory.id for r in result.memories}
        assert placed.isdisjoint(left_out) and placed | set(left_out) == {m.id for m in memories}
        shown = {m.content for m in memories if m.id in placed}
        for memory in memories:
            if left_out.get(memory.id) == REPEAT:
                assert memory.content in shown or any(repeats(memory.content, s) for s in shown)
        assert set(left_out.values()) <= {OVER_BUDGET, REPEAT}


def _said(content: str, *tags: str, kind: str = "episode") -> Memory:
    return make_memory(scope="ann", content=content, kind=kind, tags=["excerpt", *tags], valid_from=NOW, now=NOW)  # type: ignore[arg-type]


def test_questions_and_acknowledgements_take_only_the_room_left() -> None:
    asked = _said("User: What should I feed my dog in the morning?", "user", QUESTION_TAG)
    noted = _said("Assistant: Noted, I'll keep that in mind.", "assistant", ACKNOWLEDGEMENT_TAG)
    fact = _said("The user feeds their dog salmon kibble twice a day", kind="fact")
    vet = _said("User: The vet said Rex should eat lamb and rice when his stomach is upset.", "user")
    ranked = [(asked, 0.9), (noted, 0.8), (fact, 0.5), (vet, 0.4)]
    tight, left_out = pack(ranked, 120)
    assert [r.memory for r in tight.memories] == [fact, vet] and left_out == {
        asked.id: OVER_BUDGET,
        noted.id: OVER_BUDGET,
    }
    roomy = pack_block(ranked, 500)
    assert {r.memory.id for r in roomy.memories} == {asked.id, noted.id, fact.id, vet.id}  # room left: shown too
    only_questions = pack_block([(asked, 0.9)], 120)
    assert [r.memory for r in only_questions.memories] == [asked]


def test_an_excerpt_that_repeats_one_in_the_block_is_a_repeat() -> None:
    paste = (
        "The nightly backup copied the photo library to the NAS and checked every file against its hash. "
        "Two files were skipped because they were open in the editor at the time. "
        "The next run starts at two in the morning and takes about forty minutes."
    )
    first, again = _said("User: Here is the log: " + paste, "user"), _said("User: " + paste, "user")
    result, left_out = pack([(first, 0.9), (again, 0.8)], 500)
    assert [r.memory for r in result.memories] == [first] and left_out == {again.id: REPEAT}
