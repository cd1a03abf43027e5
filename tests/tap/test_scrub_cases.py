"""The scrubber, table-driven: each secret shape is caught (the label kept, the sentence readable),
and ordinary text that merely talks about passwords, PINs and keys is left exactly as it was.

All credentials below are made up in the real shapes; none is live.
"""

from __future__ import annotations

import pytest

from tap.scrub import REDACTED, scrub

# (text, exact expected output)
CAUGHT: list[tuple[str, str]] = [
    # spoken passwords, with what they are for
    ("the wifi password for the office is Blue-Falcon-77", "the wifi password for the office is [REDACTED]"),
    ("The wifi password for the office is Blue-Falcon-77.", "The wifi password for the office is [REDACTED]."),
    ("the password to my laptop is qwerty!23", "the password to my laptop is [REDACTED]"),
    ("the password of the shared drive was Drive2024", "the password of the shared drive was [REDACTED]"),
    ("my new password will be orange-Kettle-9", "my new password will be [REDACTED]"),
    ("my passphrase is 'correct horse battery'", "my passphrase is '[REDACTED]'"),
    ("Password is: Tr0ub4dor&3", "Password is: [REDACTED]"),
    ("fyi my password is hunter2 for the wifi", "fyi my password is [REDACTED] for the wifi"),
    # passcodes and PINs
    ("passcode: 99120", "passcode: [REDACTED]"),
    ("Passcode = 4471", "Passcode = [REDACTED]"),
    ("the passcode for the lobby is 7731", "the passcode for the lobby is [REDACTED]"),
    ("my PIN is 1234", "my PIN is [REDACTED]"),
    ("My PIN is 1234. Don't tell anyone.", "My PIN is [REDACTED]. Don't tell anyone."),
    ("PIN: 0921", "PIN: [REDACTED]"),
    ("the PIN for my bank card is 5567", "the PIN for my bank card is [REDACTED]"),
    ("my pin code is 889900", "my pin code is [REDACTED]"),
    ("the door code is 4477.", "the door code is [REDACTED]."),
    ("alarm code: 1290", "alarm code: [REDACTED]"),
    ("the gate code for the garage is 2468", "the gate code for the garage is [REDACTED]"),
    # labelled keys and env vars
    ("DB_PASSWORD=s3cr3t-value-42", "DB_PASSWORD=[REDACTED]"),
    ("PGPASSWORD=x9y8z7 psql -h db", "PGPASSWORD=[REDACTED] psql -h db"),
    ("MYSQL_ROOT_PASSWORD: rootpw77", "MYSQL_ROOT_PASSWORD: [REDACTED]"),
    ('{"user": "ana", "password": "correct horse"}', '{"user": "ana", "password": "[REDACTED]"}'),
    ("api_key = 'zz-1234567890abcdef'", "api_key = '[REDACTED]'"),
    ("client_secret: 8f7e6d5c4b3a2918", "client_secret: [REDACTED]"),
    ("mysql -u root --password hunter2 shop", "mysql -u root --password [REDACTED] shop"),
    ("mysql -u root --password=hunter2 shop", "mysql -u root --password=[REDACTED] shop"),
    ("cli login --token abcd1234efgh5678", "cli login --token [REDACTED]"),
    # connection strings
    ("postgres://app:S3cr3t@db.internal:5432/prod", "postgres://app:[REDACTED]@db.internal:5432/prod"),
    ("postgresql://app:S3cr3t!@db:5432/prod.", "postgresql://app:[REDACTED]@db:5432/prod."),
    (
        "mongodb+srv://admin:Zq9xPw2@cluster0.example.net/test",
        "mongodb+srv://admin:[REDACTED]@cluster0.example.net/test",
    ),
    ("redis://:hunter22@cache:6379/0", "redis://:[REDACTED]@cache:6379/0"),
    ("amqp://guest:Gu3st!x@rabbit:5672", "amqp://guest:[REDACTED]@rabbit:5672"),
    (
        "Server=tcp:x.database.windows.net;Database=db;User ID=sa;Password=Pa55w0rd!;Encrypt=True",
        "Server=tcp:x.database.windows.net;Database=db;User ID=sa;Password=[REDACTED];Encrypt=True",
    ),
    ("Driver={ODBC};Server=db;Uid=app;Pwd=Xy12zz;", "Driver={ODBC};Server=db;Uid=app;Pwd=[REDACTED];"),
    (
        "jdbc:postgresql://db/shop?user=app&password=Secr3t&ssl=true",
        "jdbc:postgresql://db/shop?user=app&password=[REDACTED]&ssl=true",
    ),
    # JWTs
    (
        "cookie eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "cookie [REDACTED]",
    ),
    (
        "jwt=eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyAic3ViIjogIjEyMyJ9.c2lnbmF0dXJlX2hlcmVfbG9uZw here",
        "jwt=[REDACTED] here",
    ),
    (
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJ0YXAifQ.YWJjZGVmZ2hpamtsbW5vcA",
        "Authorization: Bearer [REDACTED]",
    ),
    # private keys
    (
        "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
        "-----END OPENSSH PRIVATE KEY-----\nthanks",
        "key:\n[REDACTED]\nthanks",
    ),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\nZx9Q==\n-----END RSA PRIVATE KEY-----",
        "[REDACTED]",
    ),
    (
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIIrYSSNQFaA2Hwf1duRSxKtLYX5CB04fSeQ6tF1aY/PuoAoGCCqGSM49\n"
        "-----END EC PRIVATE KEY-----",
        "[REDACTED]",
    ),
    ("pasted half a key: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNz", "pasted half a key: [REDACTED]"),
    (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: me\nPublic-Lines: 2\nAAAAC3Nz\n"
        "Private-Lines: 1\nAAAAIBx7\nPrivate-MAC: 6e2b9f0ad1\nok",
        "[REDACTED]\nok",
    ),
    # API keys and tokens by shape
    ("my key is sk-ant-api03-Xy7vQ2mN9pL4kR8sT1uW6zA3bC5dE0fG", "my key is [REDACTED]"),
    ("use sk-proj-aB3dE6gH9jK2mN5pQ8sT1vW4yZ7cF0 here", "use [REDACTED] here"),
    ("token ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 ok", "token [REDACTED] ok"),
    ("AWS key AKIAIOSFODNN7EXAMPL3 in the env", "AWS key [REDACTED] in the env"),
    ("slack bot xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp", "slack bot [REDACTED]"),
    ("bot token 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0 set", "bot token [REDACTED] set"),
]

# Ordinary text that mentions passwords, PINs, keys and tokens: left exactly as it was.
LEFT_ALONE: list[str] = [
    "password reset flow",
    "We need to fix the password reset flow before Friday.",
    "The password is too weak, says the form.",
    "the password for the router is on the sticker",
    "the password for this site is the same as before",
    "the password to the vault is in my drawer",
    "the wifi password for the office is written on the fridge",
    "my password is wrong again",
    "Password: required",
    "the passwordless login works",
    "my PIN is wrong",
    "the PIN has 4 digits",
    "PIN code length is 4 digits",
    "Pin the issue to the top of the board.",
    "the door code is on the note by the entrance",
    "the code is 1234 lines long",
    "Run pwd to see the folder.",
    "We use sk-learn-style pipelines.",
    "the bearer of bad news was Tom",
    "My token of appreciation: a cake for Akiko.",
    "Commit 3eb6f2c5a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6 fixed it.",
    "request id 550e8400-e29b-41d4-a716-446655440000",
    "See https://example.com/docs?page=2 and http://localhost:8787/ui.",
    "Mail ana@example.com about the meeting at 10:30.",
    "Set max_tokens=1024 and temperature=0.2.",
    "The API key rotation policy is quarterly.",
    "Paste your public key (ssh-ed25519 AAAAC3Nza…) into the form.",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "He keeps a safe code of conduct.",
    "Use --password-file to read it from disk.",
]


@pytest.mark.parametrize(("text", "expected"), CAUGHT)
def test_secret_is_redacted_and_the_rest_kept(text: str, expected: str) -> None:
    assert scrub(text) == expected


@pytest.mark.parametrize("text", LEFT_ALONE)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert scrub(text) == text


def test_the_table_is_large_enough() -> None:
    assert len(CAUGHT) + len(LEFT_ALONE) >= 50 and len(LEFT_ALONE) >= 20


@pytest.mark.parametrize(("text", "expected"), CAUGHT)
def test_scrubbing_twice_changes_nothing(text: str, expected: str) -> None:
    assert scrub(expected) == expected and REDACTED in expected


def test_the_quick_check_never_skips_what_the_patterns_would_redact(monkeypatch: pytest.MonkeyPatch) -> None:
    """scrub skips the patterns when one search finds none of their literal parts: the same output
    as running them all, on every case of the tables, their fragments and ordinary text around them."""
    import random
    import re

    import tap.scrub
    from tests.tap.test_scrub import SECRETS

    rng = random.Random(7)
    texts = [t for t, _ in CAUGHT] + LEFT_ALONE + [text for text, _ in SECRETS.values()]
    texts += ["<private>gone</private> kept", "a </private > stray", "<PRIVATE note='x'>open"]
    # letters IGNORECASE matches to ASCII ones: ſ (s), ı and İ (i), K (k)
    texts += ["my p\u0131n is 1234", "\u017fecret_key = abcd1234efgh", "API_\u212aEY: zz9yy8xx7", "P\u0130N: 0921"]
    for text in list(texts):
        cut = rng.randrange(len(text) + 1)
        texts += [text[:cut], text[cut:], f"well, {text} and then", text.upper(), text.lower()]
    gated = [scrub(t) for t in texts]
    monkeypatch.setattr(tap.scrub, "_may_hold_secret", lambda text: True)
    monkeypatch.setattr(tap.scrub, "_MAYBE_PRIVATE", re.compile(""))  # matches every text
    assert gated == [scrub(t) for t in texts]
    assert sum(g != t for g, t in zip(gated, texts, strict=True)) > len(CAUGHT)  # it did redact
