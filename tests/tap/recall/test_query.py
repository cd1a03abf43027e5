"""The recall query: a turn reduced to what the embedder and BM25 can use."""

from __future__ import annotations

from tap.recall.query import EMBED_HEAD_WORDS, EMBED_TAIL_WORDS, LEXICAL_CHARS, reduce_query


def test_a_short_question_is_searched_as_it_is() -> None:
    query = reduce_query("  Where did   Ana move\nlast year? ")
    assert query.text == query.lexical == "Where did Ana move last year?"


def test_a_long_turn_is_embedded_by_its_start_and_its_end() -> None:
    turn = "Here is my week. " + "meetings and chores " * 700 + "so should I take the Berlin job?"
    query = reduce_query(turn)
    words = query.text.split()
    assert len(words) == EMBED_HEAD_WORDS + EMBED_TAIL_WORDS + 1
    assert query.text.startswith("Here is my week") and query.text.endswith("should I take the Berlin job")
    assert len(query.lexical) <= LEXICAL_CHARS + 1 and query.lexical.endswith("Berlin job?")


def test_a_long_paste_is_embedded_by_its_words_not_its_numbers_and_symbols() -> None:
    log = "\n".join(f"2025-03-{n % 28:02d} 12:00:{n % 60:02d} ERROR worker-{n} request {n} failed" for n in range(200))
    query = reduce_query(f"why does the nightly import fail?\n{log}\nany idea?")
    assert query.text.startswith("why does the nightly import fail ERROR request failed ERROR")
    assert not any(ch.isdigit() for ch in query.text)


def test_fenced_code_is_left_out_unless_it_is_all_there_is() -> None:
    turn = "why does this fail?\n```python\nimport os\nos.remove('/')\n```\nthanks"
    assert reduce_query(turn).text == "why does this fail? thanks"
    assert "import os" in reduce_query("```\nimport os\n```").text


def test_hashes_and_blobs_are_not_embedded() -> None:
    blob = "QUJD" * 500
    query = reduce_query(f"what is {blob} about?")
    assert query.text == "what is about?"
    assert reduce_query(blob).text == blob[:64]  # nothing else: a bounded piece of it


def test_an_empty_turn_is_empty() -> None:
    assert reduce_query(" \n ").empty


def test_a_group_named_in_a_short_question_brings_its_members_words_to_the_lexical_side() -> None:
    query = reduce_query("do I have kids?")
    assert query.text == "do I have kids?"
    assert query.lexical.split()[-2:] == ["son", "daughter"]
    assert reduce_query("what is the capital of France?").lexical == "what is the capital of France?"
