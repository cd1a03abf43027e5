"""Repeats: what the model can already see in a request, the hook path's session ledger, the retired option."""

from __future__ import annotations

import pytest

from tap.config import parse_config
from tap.errors import ConfigError
from tap.intercept.conversations import reply_key, turn_key
from tap.intercept.dialects import ANTHROPIC
from tap.intercept.repeats import MAX_SCANNED_CHARS, SessionLedger, VisibleInRequest
from tap.records import make_memory

REQUEST = {
    "system": "You are kind.",
    "messages": [
        {"role": "user", "content": "I adopted a greyhound called Pastel."},
        {"role": "assistant", "content": "Lovely name!"},
        {"role": "user", "content": "What should I pack for her class?"},
    ],
}
SAID = ANTHROPIC.transcript(REQUEST)


def test_a_memory_from_turns_present_in_the_request_is_visible() -> None:
    visible = VisibleInRequest("c1", SAID, "You are kind.")
    user_turn = turn_key("c1", 1, "I adopted a greyhound called Pastel.")
    reply = reply_key("c1", 1, "I adopted a greyhound called Pastel.")
    assert visible(make_memory(scope="s", content="The user has a dog.", conversation="c1", sources=[user_turn]))
    assert visible(make_memory(scope="s", content="The user has a dog.", conversation="c1", sources=[user_turn, reply]))
    older = turn_key("c1", 1, "something said in an earlier request")
    assert not visible(
        make_memory(scope="s", content="The user has a dog.", conversation="c1", sources=[user_turn, older])
    )
    assert not visible(make_memory(scope="s", content="The user has a dog.", conversation="c2", sources=[user_turn]))
    assert not visible(make_memory(scope="s", content="The user has a dog.", conversation="c1"))


def test_a_memory_quoted_in_the_request_is_visible_case_and_spacing_aside() -> None:
    visible = VisibleInRequest("c1", SAID, "You are kind.")
    assert visible(make_memory(scope="s", content="a greyhound   called PASTEL"))
    assert visible(make_memory(scope="s", content="you are kind."))
    assert not visible(make_memory(scope="s", content="The user lives in Lisbon."))


def test_only_the_newest_text_of_a_huge_request_is_scanned() -> None:
    old = "The user's locker code hint is the moon."
    filler = "x " * MAX_SCANNED_CHARS
    said = ANTHROPIC.transcript({"messages": [{"role": "user", "content": old}, {"role": "user", "content": filler}]})
    visible = VisibleInRequest("c", said)
    assert len(visible.haystack()) <= MAX_SCANNED_CHARS + 2
    assert not visible(make_memory(scope="s", content=old))


def test_the_session_ledger_skips_what_a_session_was_given_until_reset() -> None:
    ledger = SessionLedger(max_sessions=2)
    given, other = make_memory(scope="s", content="a"), make_memory(scope="s", content="b")
    ledger.record("s1", [given.id])
    skip = ledger.skip("s1")
    assert skip(given) and not skip(other)
    assert not ledger.skip("s2")(given)
    ledger.reset("s1")  # compaction or /clear: the context that held it is gone
    assert not ledger.skip("s1")(given)
    for session in ("a", "b", "c"):
        ledger.record(session, [given.id])
    assert ledger.given("a") == frozenset() and ledger.given("c") == {given.id}  # bounded


def test_skip_repeats_is_retired_with_a_clear_message() -> None:
    with pytest.raises(ConfigError, match="recall.skip_repeats: retired.*delete this line"):
        parse_config("[recall]\nskip_repeats = true")
