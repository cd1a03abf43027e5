"""Excerpts cut to the question's sentences for the block (tap.recall.excerpt_focus)."""

from __future__ import annotations

from tap.language.terms import stem
from tap.recall.excerpt_focus import excerpt_snippet, terms_of

LONG = (
    "User: I'm planning a trip to Jordan and I'm really interested in visiting Petra. Can you tell me more "
    "about the history of the city? By the way, I went to the Natural History Museum with my dad yesterday "
    "and loved the dinosaurs. Also, what should I pack for the desert?"
)


def test_the_sentences_holding_a_word_of_the_question_are_kept_verbatim_with_ellipses() -> None:
    line = excerpt_snippet(LONG, terms_of("When did I last go to a museum with a friend?"))
    assert line == (
        "User: … By the way, I went to the Natural History Museum with my dad yesterday and loved the dinosaurs. …"
    )


def test_a_passage_found_by_meaning_alone_or_of_one_sentence_is_shown_whole() -> None:
    assert excerpt_snippet(LONG, terms_of("Which snacks suit a long hike?")) == LONG
    one = "Assistant: The Grand Hotel near the station is the one I'd pick for a short stay."
    assert excerpt_snippet(one, terms_of("which hotel did you recommend?")) == one
    assert excerpt_snippet(LONG, frozenset()) == LONG


def test_most_of_the_passage_kept_means_the_whole_passage() -> None:
    text = "User: My sister Ana lives in Madrid. Ana works as a nurse in Madrid. Lovely city."
    assert excerpt_snippet(text, terms_of("Where does Ana live?")) == text


def test_a_list_lead_in_keeps_the_item_after_it() -> None:
    text = (
        "Assistant: Happy to help with that, it is a lovely part of the world to visit. For your stay I'd suggest "
        "these hotels: The Harbour Inn, right on the water. Breakfast there is served until eleven every day. "
        "The weather in May is mild, pack a light jacket."
    )
    line = excerpt_snippet(text, terms_of("Which hotels did you suggest?"))
    assert line == "Assistant: … For your stay I'd suggest these hotels: The Harbour Inn, right on the water. …"


def test_stems_meet_across_inflections() -> None:
    assert stem("hotels") == stem("hotel")
    assert stem("visited") == stem("visit")
    assert stem("Rachel's") == "rachel"
    assert "museum" in terms_of("the museums I visited")


def test_a_list_is_never_cut() -> None:
    text = (
        "Assistant: 1. Virtual customer service representative 2. Telehealth professional 3. Remote bookkeeper "
        "4. Virtual tutor or teacher 5. Freelance writer or editor 6. Online survey taker 7. Transcriptionist"
    )
    assert excerpt_snippet(text, terms_of("what was the 7th work from home job for seniors you listed?")) == text


def test_the_floor_never_exceeds_what_a_snippet_keeps() -> None:
    """snippet_floor is a lower bound for every question: the block passes over an excerpt by it
    without cutting it, so a floor above a real snippet would drop a line that fits."""
    import random

    from tap.recall.excerpt_focus import snippet_floor

    rng = random.Random(3)
    words = ["hotel", "Porto", "museum", "dad", "I", "visited", "the", "a", "list:", "1.", "2.", "yesterday."]
    for _ in range(2000):
        body = " ".join(rng.choice(words) for _ in range(rng.randint(1, 30)))
        content = rng.choice(["", "User: ", "Assistant: "]) + body.replace("yesterday.", rng.choice(["x.", "y!", "z?"]))
        for question in ("hotel in Porto", "museum", "dad visited", "the"):
            shown = excerpt_snippet(content, terms_of(question))
            assert snippet_floor(content) <= len(shown) - shown.count(" ")
    # and it is not trivially zero: a passage of sentences floors at its shortest one
    assert (
        snippet_floor("User: I went to Porto. It rained all week long there.")
        == len("User:") + len("I went to Porto.") - 3
    )
