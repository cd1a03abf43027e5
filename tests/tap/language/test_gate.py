"""The heuristic gate names its signals, drops chit-chat and passes personal facts."""

from __future__ import annotations

import pytest

from tap.ingest.chunker import Chunk, Turn
from tap.language.gate import heuristic_gate, heuristic_signals, named_entities


def conversation(*lines: str) -> Chunk:
    """A chunk of alternating user/assistant turns."""
    turns = [
        Turn(
            id=f"t{i}",
            role="user" if i % 2 == 0 else "assistant",
            speaker="User" if i % 2 == 0 else "Assistant",
            text=line,
            timestamp=1_683_554_400.0,
        )
        for i, line in enumerate(lines)
    ]
    return Chunk(id="c", scope="s", conversation="conv", source="proxy", turns=turns, tokens=0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hi", []),
        ("thanks!", []),
        ("ok cool", []),
        ("I'll send the report by Friday", ["commitment", "date"]),
        ("I'm going to run a marathon next year", ["commitment", "plan", "date"]),
        ("I prefer tea over coffee", ["preference"]),
        ("my favorite band is Radiohead", ["preference", "entity"]),
        ("let's use Postgres for this", ["decision", "entity"]),
        ("we decided to ship on the 3rd", ["decision"]),
        ("always answer in French", ["instruction", "entity"]),
        ("I work as a nurse in Leeds", ["self_statement", "entity"]),
        ("my wife is a pilot", ["self_statement"]),
        ("I moved to Lisbon last month", ["self_statement", "event", "date", "entity"]),
        ("the flight costs $420 and takes 3 hours", ["quantity"]),
        ("the review is on 2024-03-01 at 3pm", ["date"]),
        ("mail me at ana@example.com", ["contact"]),
    ],
)
def test_signals(text: str, expected: list[str]) -> None:
    assert heuristic_signals(text) == expected


def test_named_entities_skip_sentence_starts_and_pronouns() -> None:
    text = "Yesterday I met Priya at the Tate. She works for NASA! Then I went home."
    assert named_entities(text) == ["Priya", "Tate", "NASA"]


def test_may_is_a_month_only_in_a_date() -> None:
    assert "date" not in heuristic_signals("you may want to rest")
    assert "date" in heuristic_signals("we met in May")
    assert "date" in heuristic_signals("see you on May 5")


CHIT_CHAT = [
    ("hi", "Hello! How can I help you today?"),
    ("thanks!", "You're welcome!"),
    ("ok cool", "Great."),
    ("haha yes", "Glad you liked it!"),
    ("good morning", "Good morning! How are you?"),
    ("sounds good", "Anything else?"),
    ("lol", "😄"),
    ("nice, thank you so much", "Any time."),
    ("bye for now", "Take care!"),
    ("hmm ok", "Let me know if you have questions."),
]

INFORMATIVE = [
    ("I moved to Lisbon last month with my wife.", "Welcome! How are you finding it?"),
    ("I'm allergic to peanuts, keep that in mind.", "Noted, I'll avoid peanut recipes."),
    ("Let's use Postgres for the billing service.", "Good call, we'll go with Postgres 16."),
    ("Always answer in French from now on.", "D'accord."),
    ("My daughter Lea starts school in September.", "Exciting! Which school?"),
    ("I prefer short answers without bullet points.", "Understood."),
    ("I'm going to run the Berlin marathon next year.", "Great goal!"),
    ("I work night shifts at the hospital.", "That sounds demanding."),
    ("We decided to launch the beta on March 3.", "I'll prepare the release notes."),
    ("My favorite editor is Neovim.", "Nice choice."),
]


def pass_rate(pairs: list[tuple[str, str]]) -> float:
    return sum(heuristic_gate(conversation(*pair)).passed for pair in pairs) / len(pairs)


def test_gate_pass_rate_on_mixed_corpus() -> None:
    chit_chat, informative = pass_rate(CHIT_CHAT), pass_rate(INFORMATIVE)
    mixed = pass_rate(CHIT_CHAT + INFORMATIVE)
    print(f"gate pass rate: chit-chat {chit_chat:.0%}, informative {informative:.0%}, mixed {mixed:.0%}")
    assert chit_chat == 0.0
    assert informative == 1.0
    assert mixed == 0.5


def test_decision_names_reasons() -> None:
    passed = heuristic_gate(conversation("I moved to Lisbon last month."))
    assert passed.passed
    assert passed.reasons == ["self_statement", "event", "date", "entity"]
    failed = heuristic_gate(conversation("thanks!", "You're welcome!"))
    assert not failed.passed
    assert failed.reasons == ["score 0 < 3"]


def test_weak_signals_alone_need_company() -> None:
    assert not heuristic_gate(conversation("Thanks, Priya! See you Monday.")).passed
    assert heuristic_gate(conversation("Thanks, Priya! See you Monday.", "The flight takes 3 hours.")).passed
    assert heuristic_gate(conversation("Priya flies to Oslo on May 5, it takes 3 hours.")).passed


def test_min_score_is_tunable() -> None:
    chunk = conversation("I prefer tea.")
    assert heuristic_gate(chunk).passed is True  # one strong signal = 3 points
    assert heuristic_gate(chunk, min_score=4).passed is False
