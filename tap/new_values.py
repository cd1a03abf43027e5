"""A new value for a thing: "we moved the wedding to September 3" retires "the wedding is on June 12".

Some updates name neither a slot tap knows nor words they take back: they say that a named thing
now has another date or another amount ("we pushed the launch to May", "my doctor upped my
citalopram to 40mg", "they cut my hours to 20 a week"), or none ("the landlord cancelled Friday's
meeting"). An extractor marks such a statement with `CandidateMemory.new_value`: the words of the
thing, head noun last (tap.rules.new_values reads it offline). Reconcile then supersedes, by that
statement, the older statements of the same person that name the thing (every one of its words:
"my dentist appointment" is not "the team meeting") and state a value for it (a number, a month or
a weekday): "the wedding is on June 12 in Lisbon", "takes 20mg of citalopram every morning". A
statement about the thing that states no value ("my sister is the maid of honour at the wedding")
stays, and so does an event ("we booked the venue for the wedding on May 2"): what happened is
history.

Invariants: pure; the words are lower-cased, the head noun singular.
"""

from __future__ import annotations

import re

from tap.goals import GOAL_KINDS

__all__ = ["VALUE_KINDS", "states_a_value"]

VALUE_KINDS = GOAL_KINDS
"""The kinds a statement of a thing's current value is stored as, as a goal's (an event is history)."""

_VALUE = re.compile(
    r"\d"
    r"|\b(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sept?(?:ember)?"
    r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?|(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)days?)\b"
    r"|\b(?i:noon|midnight|tomorrow|spring|summer|autumn|winter)\b"
)


def states_a_value(content: str) -> bool:
    """Whether a statement gives a date, a time or an amount (a digit, a month, a weekday)."""
    return _VALUE.search(content) is not None
