"""tap.secret_shapes through the scrubber: each shape the issue named is caught (card numbers spaced,
dashed and plain, Luhn-checked; US SSNs; Stripe keys; 40-hex tokens after "token"; an AWS secret key
alone; "my password's X"; "wifi pw: X"; the same in other languages), and ordinary text (numbers,
hashes, ids, the dev conversations of bench/quality) is left as it was.

Every credential below is made up in the real shape (card numbers are the networks' test numbers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tap.scrub import scrub
from tap.secret_shapes import entropy, luhn_ok

CAUGHT: list[tuple[str, str]] = [
    ("my card is 4111 1111 1111 1111, expires 09/29", "my card is [REDACTED], expires 09/29"),
    ("card 5555-5555-5555-4444 please", "card [REDACTED] please"),
    ("amex 378282246310005.", "amex [REDACTED]."),
    ("visa 4012888888881881 2024 renewal", "visa [REDACTED] 2024 renewal"),
    ("discover: 6011 1111 1111 1117", "discover: [REDACTED]"),
    ("my SSN is 123-45-6789", "my SSN is [REDACTED]"),
    ("social security number 123456789 on file", "social security number [REDACTED] on file"),
    ("ssn: 219 09 9999", "ssn: [REDACTED]"),
    ("stripe key sk_live_4eC39HqLyjWDarjtT1zdp7dc here", "stripe key [REDACTED] here"),
    ("rk_live_51HaBcDeFgHiJkLmNoPqRsTuV restricted", "[REDACTED] restricted"),
    ("webhook whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "webhook [REDACTED]"),
    ("token 3f9a1c2b4d5e6f708192a3b4c5d6e7f8091a2b3c", "token [REDACTED]"),
    ("my github token is 3f9a1c2b4d5e6f708192a3b4c5d6e7f8091a2b3c ok", "my github token is [REDACTED] ok"),
    ("here: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY done", "here: [REDACTED] done"),
    ("my password's Hunter2!", "my password's [REDACTED]!"),  # sentence punctuation stays
    ("wifi pw: kettle-Blue-42", "wifi pw: [REDACTED]"),
    ("mein Passwort ist Sonne123", "mein Passwort ist [REDACTED]"),
    ("das Passwort für das WLAN ist Gartenzwerg7", "das Passwort für das WLAN ist [REDACTED]"),
    ("mon mot de passe est soleil42", "mon mot de passe est [REDACTED]"),
    ("la contraseña es Girasol99", "la contraseña es [REDACTED]"),
    ("a senha é Abacaxi#7", "a senha é [REDACTED]"),
    ("пароль: Солнце2024", "пароль: [REDACTED]"),
    ("私のパスワードはsakura2024です", "私のパスワードは[REDACTED]"),
    ("gitlab glpat-xYz123AbC456dEf789GhI0 ok", "gitlab [REDACTED] ok"),
    ("npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 in .npmrc", "[REDACTED] in .npmrc"),
]

LEFT_ALONE: list[str] = [
    "order 4111 1111 1111 1112 shipped",  # fails the Luhn check
    "timestamp 1733600000000 in ms",
    "call me at 555-123-4567",
    "ISBN 978-3-16-148410-0",
    "commit 3eb6f2c5a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6 fixed the token refresh",
    "request id 550e8400-e29b-41d4-a716-446655440000",
    "the token of appreciation was a cake",
    "my password is wrong again",
    "mein Passwort ist falsch",
    "mot de passe oublié",
    "the wifi pw is on the fridge",
    "tests/proxy/test_recall_process_big_requests.py passed",
    "area 000-12-3456 is no SSN",
    "the years 2023 2024 2025 2026 were busy",
    "version 1.2.3-45-6789 is out",
]


@pytest.mark.parametrize(("text", "expected"), CAUGHT)
def test_each_shape_is_caught(text: str, expected: str) -> None:
    assert scrub(text) == expected
    assert scrub(expected) == expected  # idempotent


@pytest.mark.parametrize("text", LEFT_ALONE)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert scrub(text) == text


def test_luhn_and_entropy() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert (
        entropy("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY") > 4.0 > entropy("TestRecallProcessAnswersAsThisProcessTwo")
    )


def test_the_dev_conversations_pass_unchanged() -> None:
    """Every text of the dev split of bench/quality (the test split is never read here)."""
    texts: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in sorted((Path(__file__).parents[2] / "bench" / "quality" / "conversations").glob("*.json")):
        conversation = json.loads(path.read_text())
        if conversation.get("split") != "test":
            walk(conversation)
    assert len(texts) > 200
    changed = [text for text in texts if scrub(text) != text and "password" not in text.lower()]
    assert changed == []
