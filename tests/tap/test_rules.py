"""The offline extractor turns plain conversation into self-contained, dated, narrowly cited memories."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tap.chunker import Chunk, Role, Turn
from tap.rules import (
    CandidateMemory,
    RulesExtractor,
    episode_memory,
    resolve_dates,
    rewrite_first_person,
    third_person,
)

MAY_8 = datetime(2023, 5, 8, 14, 0, tzinfo=UTC).timestamp()  # a Monday
MAY_9 = datetime(2023, 5, 9, 9, 30, tzinfo=UTC).timestamp()


def turn(tid: str, speaker: str, text: str, *, timestamp: float = MAY_8) -> Turn:
    role: Role = "assistant" if speaker in ("Assistant", "Melanie", "Ben") else "user"
    return Turn(id=tid, role=role, speaker=speaker, text=text, timestamp=timestamp)


def chunk_of(*turns: Turn) -> Chunk:
    return Chunk(id="c1", scope="ana", conversation="conv", source="proxy", turns=list(turns), tokens=0)


def extract(*turns: Turn) -> list[CandidateMemory]:
    return RulesExtractor().extract(chunk_of(*turns))


def contents(*turns: Turn) -> list[str]:
    return [memory.content for memory in extract(*turns)]


@pytest.mark.parametrize(
    ("text", "content", "kind"),
    [
        ("I moved to Lisbon last month.", "Ana moved to Lisbon (around April 2023)", "event"),
        ("I prefer tea over coffee.", "Ana prefers tea over coffee", "preference"),
        ("Always answer in French.", "Instruction from Ana: Always answer in French", "instruction"),
        ("I'm going to run a marathon next year.", "Ana is going to run a marathon (in 2024)", "plan"),
        ("Let's use Postgres for this.", "Ana and Assistant decided to use Postgres for this", "decision"),
        ("We decided to deploy on Fly.io", "Ana and Assistant decided to deploy on Fly.io", "decision"),
        (
            "My wife Marta works at the Gulbenkian museum.",
            "Ana's wife Marta works at the Gulbenkian museum",
            "fact",
        ),
        (
            "Hey! So I went to a pottery workshop yesterday and loved it!",
            "Ana went to a pottery workshop and loved it (on 7 May 2023)",
            "event",
        ),
        (
            "Gonna visit my parents in Braga next Friday.",
            "Ana is gonna visit Ana's parents in Braga (on Friday 12 May 2023)",
            "plan",
        ),
        (
            "I've been learning the cello since last year.",
            "Ana has been learning the cello (since 2022)",
            "fact",
        ),
        ("I'm interested in a course in October.", "Ana is interested in a course (in October 2023)", "fact"),
    ],
)
def test_key_examples(text: str, content: str, kind: str) -> None:
    [memory] = extract(turn("u1", "Ana", text), turn("a1", "Assistant", "Noted."))
    assert (memory.content, memory.kind) == (content, kind)
    assert memory.turn_ids == ["u1"]
    assert memory.valid_from == MAY_8
    assert 1 <= memory.importance <= 5


def test_statements_by_both_speakers_of_a_named_conversation() -> None:
    memories = extract(
        turn("D1:1", "Caroline", "I adopted a rescue greyhound called Pixel two weeks ago."),
        turn("D1:2", "Melanie", "We went camping at the lake last weekend. My kids loved the canoe."),
    )
    assert [(m.content, m.turn_ids) for m in memories] == [
        ("Caroline adopted a rescue greyhound called Pixel (around 24 April 2023)", ["D1:1"]),
        (
            "Melanie: We went camping at the lake (the weekend of 6 May 2023)",
            ["D1:2"],
        ),  # "we" is not Caroline
        ("Melanie's kids loved the canoe", ["D1:2"]),
    ]


def test_answer_cites_the_question_turn_once() -> None:
    memories = extract(
        turn("D2:1", "Melanie", "Thanks! What did you end up studying?"),
        turn(
            "D2:2",
            "Caroline",
            "Thanks, Mel! I enrolled in a psychology degree at Edinburgh. It starts in October.",
        ),
    )
    assert [(m.content, m.turn_ids) for m in memories] == [
        ("Caroline enrolled in a psychology degree at Edinburgh", ["D2:1", "D2:2"]),
        ("Caroline: It starts (in October 2023)", ["D2:2"]),
    ]


def test_brief_answer_keeps_the_question() -> None:
    [memory] = extract(turn("q", "Ana", "Have you ever been to Porto?"), turn("a", "Ben", "Yes, twice."))
    assert memory.content == 'Ana asked "Have you ever been to Porto?"; Ben: Yes, twice'
    assert memory.turn_ids == ["q", "a"]


def test_chit_chat_questions_and_fillers_make_no_memories() -> None:
    assert (
        extract(
            turn("1", "Ana", "Hi!"),
            turn("2", "Assistant", "Hello! How can I help you today?"),
            turn("3", "Ana", "Thanks so much, that's really cool. Haha ok."),
            turn("4", "Assistant", "You're welcome! Anything else?"),
            turn("5", "Ana", "Nope, all good. Talk soon!"),
        )
        == []
    )


def test_unnamed_assistant_explanations_are_skipped_but_promises_kept() -> None:
    memories = extract(
        turn("u", "Ana", "How does a B-tree index work in Postgres?"),
        turn(
            "a",
            "Assistant",
            "A B-tree index keeps sorted keys in balanced pages so lookups take logarithmic time. "
            "I will draft the migration for the orders table tomorrow.",
        ),
    )
    assert [m.content for m in memories] == ["Assistant will draft the migration for the orders table (on 9 May 2023)"]


def test_shared_photo_becomes_its_own_memory() -> None:
    memories = extract(
        turn(
            "D3:5",
            "Melanie",
            "I painted this last summer! [shares a photo: a painting of a sunset over a lake]",
        )
    )
    assert [m.content for m in memories] == [
        "Melanie shared a photo: a painting of a sunset over a lake",
        "Melanie painted this (in summer 2022)",
    ]
    assert [m.turn_ids for m in memories] == [["D3:5"], ["D3:5"]]


def test_redacted_secrets_make_no_memory() -> None:
    assert contents(turn("u", "Ana", "My password is [REDACTED] for the office wifi.")) == []


def test_repeated_statement_merges_provenance() -> None:
    memories = extract(
        turn("t1", "Ana", "I prefer tea over coffee."),
        turn("t2", "Assistant", "Noted."),
        turn("t3", "Ana", "I prefer tea over coffee."),
    )
    assert [(m.content, m.turn_ids) for m in memories] == [("Ana prefers tea over coffee", ["t1", "t3"])]


def test_citations_are_narrow_and_inside_the_chunk() -> None:
    turns = [
        turn("D1:1", "Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
        turn("D1:2", "Melanie", "Wow! What happened there? Did you hear any inspiring stories?"),
        turn("D1:3", "Caroline", "The transgender stories were so inspiring. I was thankful for the support."),
        turn("D1:4", "Melanie", "I'm off to go swimming with the kids. Painting is my way to relax after work."),
    ]
    memories = extract(*turns)
    assert len(memories) >= 4
    ids = {t.id for t in turns}
    for memory in memories:
        assert set(memory.turn_ids) <= ids
        assert 1 <= len(memory.turn_ids) <= 2
    assert memories[0].content == "Caroline went to a LGBTQ support group and it was so powerful (on 7 May 2023)"


def test_extraction_is_deterministic() -> None:
    turns = [turn("a", "Ana", "I moved to Lisbon last month."), turn("b", "Ben", "I love the tram 28 there!")]
    assert extract(*turns) == extract(*turns)


def test_without_timestamp_relative_dates_stay_as_written() -> None:
    [memory] = extract(turn("u", "Ana", "I moved to Lisbon last month.", timestamp=0.0))
    assert memory.content == "Ana moved to Lisbon last month"


@pytest.mark.parametrize(
    ("text", "body", "dates"),
    [
        ("I went there yesterday", "I went there", ["on 7 May 2023"]),
        ("I went there last night", "I went there", ["on 7 May 2023"]),
        ("I'm flying out tomorrow", "I'm flying out", ["on 9 May 2023"]),
        ("I gave a talk last week", "I gave a talk", ["the week before 8 May 2023"]),
        ("I moved last month", "I moved", ["around April 2023"]),
        ("I painted it last year", "I painted it", ["in 2022"]),
        ("I'll start next month", "I'll start", ["around June 2023"]),
        ("I met her last Friday", "I met her", ["on Friday 5 May 2023"]),
        ("I'll call next Friday", "I'll call", ["on Friday 12 May 2023"]),
        ("I went to a poetry reading last Fri", "I went to a poetry reading", ["on Friday 5 May 2023"]),
        ("I went on Saturday", "I went", ["on Saturday 6 May 2023"]),
        ("I moved here 4 years ago", "I moved here", ["around 2019"]),
        ("We met two weeks ago", "We met", ["around 24 April 2023"]),
        ("a few days ago I quit", "I quit", ["around 5 May 2023"]),
        ("we hiked last weekend", "we hiked", ["the weekend of 6 May 2023"]),
        ("I'm going to a conference in July", "I'm going to a conference", ["in July 2023"]),
        ("I was in Rome in March", "I was in Rome", ["in March 2023"]),
        ("I travelled last summer", "I travelled", ["in summer 2022"]),
        ("I've lived here since last year", "I've lived here", ["since 2022"]),
        ("Yesterday, I ran 10k", "I ran 10k", ["on 7 May 2023"]),
        ("I went there in July 2022", "I went there in July 2022", []),
        ("you may want to rest", "you may want to rest", []),
        ("I teach Sunday school", "I teach Sunday school", []),
        ("over the last year I learned a lot", "over the last year I learned a lot", []),
        ("last year's trip was fun", "last year's trip was fun", []),
    ],
)
def test_resolve_dates(text: str, body: str, dates: list[str]) -> None:
    assert resolve_dates(text, MAY_8) == (body, dates)


def test_resolve_dates_uses_each_turns_own_date() -> None:
    assert resolve_dates("I saw it yesterday", MAY_9) == ("I saw it", ["on 8 May 2023"])


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I love painting with my kids", "Sam loves painting with Sam's kids"),
        ("I really miss my old job", "Sam really misses Sam's old job"),
        ("I don't drink coffee", "Sam doesn't drink coffee"),
        ("I've got a dog and I need a bigger flat", "Sam has got a dog and Sam needs a bigger flat"),
        ("I went home and I was tired", "Sam went home and Sam was tired"),
        ("The group made me feel accepted", "The group made Sam feel accepted"),
        ("I study biology and I fly often", "Sam studies biology and Sam flies often"),
    ],
)
def test_rewrite_first_person(sentence: str, expected: str) -> None:
    assert rewrite_first_person(sentence, "Sam") == expected


@pytest.mark.parametrize(
    ("verb", "expected"),
    [("love", "loves"), ("go", "goes"), ("watch", "watches"), ("try", "tries"), ("play", "plays")]
    + [("went", "went"), ("moved", "moved"), ("need", "needs"), ("have", "has"), ("can", "can")],
)
def test_third_person(verb: str, expected: str) -> None:
    assert third_person(verb) == expected


def test_episode_memory_renders_and_cites_every_turn() -> None:
    chunk = chunk_of(
        turn("D1:1", "Caroline", "Hey Mel!  Long   time."),
        turn("D1:2", "Melanie", "Hi! I just got back from Oslo.", timestamp=MAY_9),
    )
    episode = episode_memory(chunk)
    assert episode.kind == "episode"
    assert episode.content == (
        "Conversation from 8 May 2023 to 9 May 2023:\n"
        "Caroline: Hey Mel! Long time.\n"
        "Melanie: Hi! I just got back from Oslo."
    )
    assert episode.turn_ids == ["D1:1", "D1:2"]
    assert episode.valid_from == MAY_8


def test_episode_memory_of_one_day() -> None:
    episode = episode_memory(chunk_of(turn("a", "Ana", "I moved to Lisbon.")))
    assert episode.content == "Conversation on 8 May 2023:\nAna: I moved to Lisbon."


def test_a_new_version_changes_a_slot_not_the_subject() -> None:
    from tap.reconcile import same_subject

    assert same_subject(
        "Ana works as a nurse at the Santa Maria hospital", "Ana works as a nurse at the São José hospital"
    )
    assert same_subject("Ana lives in Lisbon", "Ana lives in Porto now")
    assert not same_subject(
        "I'm moving the billing service to Postgres next Monday", "I'm moving the search index to Kafka next Friday"
    )
    assert not same_subject("Ana lives in Lisbon", "Bob lives in Lisbon")
