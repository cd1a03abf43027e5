"""Reading a death off a sentence (tap.language.death): who died, and what is no death at all."""

from __future__ import annotations

import pytest

from tap.language.death import read_death

DEATHS = [
    ("Luna passed away last week, I'm heartbroken.", ("luna", "")),
    ("My dad died in March.", ("", "dad")),
    ("my cat Luna died", ("luna", "cat")),
    ("Sadly my old dog Rex passed away", ("rex", "dog")),
    ("Our dog, Biscuit, died on Friday", ("biscuit", "dog")),
    ("Grandpa died last night", ("", "grandpa")),
    ("We had to put Max down yesterday.", ("max", "")),
    ("We had to put our dog to sleep", ("", "dog")),
    ("I lost my grandma last year", ("", "grandma")),
    ("we lost our dad to cancer", ("", "dad")),
    ("after my grandma passed away I moved to Leeds", ("", "grandma")),
]
NOT_DEATHS = [
    "My phone died on the train.",
    "My laptop died again",
    "My plant died",
    "my friend's dog died",
    "Sam's cat Luna died",
    "I put my baby down for a nap",
    "we had to put Emma to sleep early",
    "My dad almost died",
    "What if my dog died?",
    "I thought Luna died",
    "I dreamt my dad died",
    "I lost my cat.",
    "I lost my mom in the supermarket",
    "I lost my dad's watch",
]


@pytest.mark.parametrize(("sentence", "who"), DEATHS)
def test_a_death_names_who_died(sentence: str, who: tuple[str, str]) -> None:
    assert read_death(sentence) == who


@pytest.mark.parametrize("sentence", NOT_DEATHS)
def test_no_death_of_someone_the_speaker_has(sentence: str) -> None:
    assert read_death(sentence) == ("", "")
