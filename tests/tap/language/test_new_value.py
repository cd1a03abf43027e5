"""A new date or amount for a named thing (tap.language.new_value) and the statements of its old
value that it retires (tap.language.new_value)."""

from __future__ import annotations

import pytest

from tap.language.new_value import read_new_value, states_a_value

CHANGES = [
    ("We moved the wedding to September 3, same venue.", "wedding"),
    ("the launch got pushed back to May", "launch"),
    ("Our flight was moved to Friday morning", "flight"),
    ("I moved my dentist appointment to next Tuesday", "dentist appointment"),
    ("I moved the meeting to 3pm tomorrow", "meeting"),
    ("Standup moved to 10am starting next week.", "standup"),
    ("My doctor upped my citalopram to 40mg.", "citalopram"),
    ("They cut my hours to 20 a week.", "hour"),
    ("My rent was raised to 1500 a month", "rent"),
    ("they increased my salary to 80k", "salary"),
    ("The landlord cancelled Friday's meeting.", "meeting"),
    ("The team sync was moved to Tuesdays at 3pm.", "team sync"),
    ("We called off the party, too much going on.", "party"),
    ("My gym class got cancelled today", "gym class"),
    ("Did they cancel the meeting?", ""),
    # no change: a question, a condition, a wish, a place, no date or amount
    ("should we move the wedding to May?", ""),
    ("if they cut my hours to 20 I quit", ""),
    ("I want to move the meeting to Friday", ""),
    ("We're thinking of moving the wedding to June", ""),
    ("We moved the couch to the bedroom", ""),
    ("we pushed the release to next sprint", ""),
    ("I changed my mind to go", ""),
    ("We moved to Bristol in May", ""),
    ("I moved to 5th avenue last year", ""),
]


@pytest.mark.parametrize(("sentence", "thing"), CHANGES)
def test_a_new_date_or_amount_names_its_thing(sentence: str, thing: str) -> None:
    assert read_new_value(sentence) == thing


def test_a_value_is_a_number_a_month_or_a_weekday() -> None:
    assert states_a_value("The user's wedding is on June 12 in Lisbon")
    assert states_a_value("The user takes 20mg of citalopram every morning")
    assert states_a_value("The team's standup is on Mondays")
    assert not states_a_value("The user's sister is the maid of honour at their wedding")
    assert not states_a_value("The user may come later")  # the verb, not the month
