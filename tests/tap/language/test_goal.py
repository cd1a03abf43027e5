"""Goals and reaching them: what a stored statement works towards (tap.language.goal) and what a sentence
says was reached (tap.language.goal), compared by head noun."""

from __future__ import annotations

import pytest

from tap.language.goal import goal_object, head_noun, read_fulfilment

GOALS = [
    ("The user is saving up for a house", "home"),
    ("The user is looking for a new job", "job"),
    ("The user is training for the Berlin marathon", "marathon"),
    ("The user wants to adopt a dog", "dog"),
    ("The user is house-hunting in Leeds", "home"),
    ("The user is applying for PhD programs", "program"),
    ("The user plans to buy a car next year", "car"),
    ("The user is going to buy a house", "home"),
    ("The user is going to Japan for two weeks, Tokyo then Kyoto (in April 2024)", "japan"),
    ("The user is flying to New York on Friday", "york"),
    ("The user is expecting their first baby (in March 2024)", "baby"),
    ("The user is expecting twins in May", "baby"),
    ("The user is pregnant", "baby"),
    ("The user is expecting a call from their landlord", ""),
    ("The user is reading Dune right now, loving it", "dune"),
    ("The user is building a deck in the backyard", "deck"),
    ("The user loves reading", ""),
    ("The user loves their house", ""),
    ("The user bought a house in Leeds", ""),
]
REACHED = [
    ("We finally bought a house in Leeds!", "home"),
    ("We've bought our first home", "home"),
    ("I finally found a flat near the park", "home"),
    ("I got a job at Stripe!", "job"),
    ("I ran the Berlin marathon on Sunday!", "marathon"),
    ("We adopted a dog named Pepper last week.", "dog"),
    ("I got into a PhD program at Edinburgh.", "program"),
    ("I bought a laptop bag yesterday.", "bag"),
    ("I didn't get the job", ""),
    ("If we buy a house we will need a car", ""),
    ("I got sick last week", ""),
    ("I got home late", ""),
    ("My sister bought a house", ""),
    ("Did you find a flat?", ""),
    ("I got a new one", ""),
    ("back from Japan! Kyoto was the highlight", "japan"),
    ("We just got back from our trip to New York", "york"),
    ("when we get back from Japan I'll call you", ""),
    ("I'm back from lunch", ""),
    ("Our daughter Maya was born last week!", "baby"),
    ("We had the baby!", "baby"),
    ("We welcomed our second child on Friday", "baby"),
    ("I gave birth to a boy on Monday", "baby"),
    ("My sister's baby was born", ""),
    ("I was born in 1990", ""),
    ("when our baby is born we will move", ""),
    ("We had a great weekend", ""),
    ("Finished Dune last night, starting Foundation next.", "dune"),
    ("We finished the deck!", "deck"),
    ("Finished?", ""),
    ("Got any tips for getting started?", ""),
    ("Just got some new shoes, too!", ""),
    ("finished her screenplay and printed it", ""),
    ("I hurt my knee, so I pulled out of the half marathon.", "marathon"),
    ("I didn't pull out of the race", ""),
]


@pytest.mark.parametrize(("content", "head"), GOALS)
def test_a_goal_names_what_it_works_towards(content: str, head: str) -> None:
    assert goal_object(content) == head


@pytest.mark.parametrize(("sentence", "head"), REACHED)
def test_a_reached_goal_names_what_was_reached(sentence: str, head: str) -> None:
    assert read_fulfilment(sentence) == head


def test_the_head_noun_ends_before_a_preposition_or_a_name() -> None:
    assert head_noun("a dog named Pepper") == "dog"
    assert head_noun("a laptop bag from the shop") == "bag"
    assert head_noun("a new one") == ""
