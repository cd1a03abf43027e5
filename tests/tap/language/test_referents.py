"""A sentence that opens with "she" or "he" gets back the one name the speaker gave that person."""

from __future__ import annotations

import pytest

from tap.language.rules.referents import named_people, with_referent
from tests.tap.language.test_rules import contents, turn


def test_the_one_person_the_speaker_named_is_who_she_is() -> None:
    said = [
        turn("u1", "User", "My daughter Ines starts school in September."),
        turn("a1", "Assistant", "How exciting!"),
        turn("u2", "User", "she's allergic to peanuts, I need to tell the school"),
    ]
    assert any(c.startswith("The user's daughter Ines is allergic to peanuts") for c in contents(*said))


@pytest.mark.parametrize(
    ("named", "sentence", "expected"),
    [
        ("my sister Maya", "she's been climbing for years", "my sister Maya has been climbing for years"),
        ("our manager Priya", "she wants it done by Friday", "our manager Priya wants it done by Friday"),
        ("My husband Dev", "he works nights", "my husband Dev works nights"),
        ("my husband Dev", "she works nights", "she works nights"),  # no "she" was named
        ("my sister Maya and my mum Rosa", "she loves it", "she loves it"),  # two: ambiguous
        ("my friend Sam", "he's moving to Leeds", "my friend Sam is moving to Leeds"),  # a friend is either
        ("", "she's lovely", "she's lovely"),  # nobody named
        ("my sister Maya", "shell scripts are fine", "shell scripts are fine"),  # only the word itself
        ("my mum's birthday is on the 12th", "she loves jazz", "my mum loves jazz"),  # no name needed
        ("my dad", "he's retiring in May", "my dad is retiring in May"),
        ("my daughter's teacher called", "she said it's on Friday", "she said it's on Friday"),  # whose "she"?
        ("my sisters", "she loves it", "she loves it"),  # not one person
    ],
)
def test_with_referent(named: str, sentence: str, expected: str) -> None:
    assert with_referent(sentence, named_people(named)) == expected


def test_only_the_speakers_own_mentions_count() -> None:
    said = [
        turn("m1", "Melanie", "My sister Ana just moved to Porto."),
        turn("c1", "Caroline", "she's doing great at her new job"),
    ]
    assert not any("Ana" in c for c in contents(*said) if c.startswith("Caroline") or "doing great" in c)
