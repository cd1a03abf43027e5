"""Reading a request to forget off a user's turn (tap.language.forget_requests)."""

from __future__ import annotations

import pytest

from tap.language.forget_requests import forget_request, names_all

REQUESTS = [
    ("please forget my address, I don't want you storing that", ("address",)),
    ("Forget my phone number please", ("phone", "number")),
    ("forget what I said about my ex", ("ex",)),
    ("Can you delete my address from your memory?", ("address",)),
    ("don't remember my salary, it's private", ("salary",)),
    ("Please don't store my medical details", ("medical",)),
    ("ok forget my ex, tell me about Rome", ("ex",)),
    ("Oh and forget my old address please", ("address",)),
    ("ok, forget my ex", ("ex",)),
    ("Could you forget my phone number please?", ("phone", "number")),
    ("forget I said that about Monzo, I'd rather not have my old employer stored", ("monzo",)),
    ("forget what I told you about Dana", ("dana",)),
]
NOT_REQUESTS = [
    "I always forget my keys",
    "Don't forget my birthday is on Friday!",
    "did you forget my order?",
    "why did you forget my name?",
    "delete my branch and push again",
    "remove my debug prints from the script",
    "forget it, let's move on",
    "I forget what I said about it",
    "I just forget my keys all the time",
    "I tried and forget my password every time",
    "forget my last message, I sent it too early",
    "I can relax, forget my troubles, and get lost in another world.",
]


@pytest.mark.parametrize(("text", "words"), REQUESTS)
def test_a_request_to_forget_names_what(text: str, words: tuple[str, ...]) -> None:
    assert forget_request(text) == words


@pytest.mark.parametrize("text", NOT_REQUESTS)
def test_what_only_sounds_like_a_request_to_forget_is_none(text: str) -> None:
    assert forget_request(text) == ()


def test_what_is_forgotten_names_the_words_whole() -> None:
    assert names_all("The user's address is 12 Rua Augusta", ("address",))
    assert names_all("Both addresses are in Lisbon", ("address",))
    assert not names_all("The user addressed the board", ("address",))
    assert names_all("The user's phone number is 912", ("phone", "number"))
    assert not names_all("The user's phone is a Pixel", ("phone", "number"))
