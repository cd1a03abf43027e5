"""Secrets are redacted, private spans vanish, ordinary prose is left exactly as it was."""

from __future__ import annotations

import pytest

from tap.scrub import REDACTED, scrub

# Made-up credentials of the real shapes (none of them is live).
SECRETS = {
    "anthropic": (
        "my key is sk-ant-api03-Xy7vQ2mN9pL4kR8sT1uW6zA3bC5dE0fG",
        "sk-ant-api03-Xy7vQ2mN9pL4kR8sT1uW6z",
    ),
    "openai": ("OPENAI_API_KEY=sk-4fR9xQ2mN7pL1kT8sW3uV6zA0bC5dE9gH2jK4mN", "sk-4fR9xQ2mN7pL1kT8sW3uV6zA0bC"),
    "openai-project": (
        "use sk-proj-aB3dE6gH9jK2mN5pQ8sT1vW4yZ7cF0 here",
        "sk-proj-aB3dE6gH9jK2mN5pQ8sT1vW4yZ7cF0",
    ),
    "github": (
        "token ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 ok",
        "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    ),
    "github-pat": (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz012345",
        "github_pat_11ABCDEFG0123456789_abcdefghij",
    ),
    "aws-access": ("AWS key AKIAIOSFODNN7EXAMPL3 in the env", "AKIAIOSFODNN7EXAMPL3"),
    "aws-secret": (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
    ),
    "slack": ("slack bot xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp", "xoxb-1234567890-0987654321"),
    "google": ("maps key AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    "jwt": (
        "cookie eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    ),
    "bearer": ("curl -H 'Authorization: Bearer 9f8e7d6c5b4a39281706' url", "9f8e7d6c5b4a39281706"),
    "telegram": (
        "bot token 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0 set",
        "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
    ),
    "pem": (
        "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\nZx9Q==\n-----END RSA PRIVATE KEY-----\ndone",
        "MIIEowIBAAKCAQEA7bq",
    ),
    "password-colon": ("login with password: Tr0ub4dor&3 please", "Tr0ub4dor"),
    "password-equals": ("DB_PASSWORD=s3cr3t-value-42", "s3cr3t-value-42"),
    "passwd": ("passwd=letmein99", "letmein99"),
    "pwd": ("pwd: qwerty123", "qwerty123"),
    "json-password": ('{"user": "ana", "password": "correct horse battery"}', "correct horse battery"),
    "spoken-password": ("fyi my password is hunter2 for the wifi", "hunter2"),
    "url-credentials": ("clone https://ana:Zx81kPq@git.example.com/repo.git", "Zx81kPq"),
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_each_secret_kind_is_redacted(kind: str) -> None:
    text, secret = SECRETS[kind]
    cleaned = scrub(text)
    assert secret not in cleaned
    assert REDACTED in cleaned


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password: hunter2", "password: [REDACTED]"),
        ('"password": "hunter2"', '"password": "[REDACTED]"'),
        ("Authorization: Bearer abc123def456ghi", "Authorization: Bearer [REDACTED]"),
        ("https://ana:pa55word@host/x", "https://ana:[REDACTED]@host/x"),
        ("My password is hunter2.", "My password is [REDACTED]."),
        (
            "PEM:\n-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\nafter",
            "PEM:\n[REDACTED]\nafter",
        ),
    ],
)
def test_labels_are_kept_and_only_values_replaced(text: str, expected: str) -> None:
    assert scrub(text) == expected


def test_private_spans_are_removed_with_their_tags() -> None:
    text = "I live in Porto. <private>My PIN is 4412.</private> I like tea."
    assert scrub(text) == "I live in Porto.  I like tea."


def test_private_spans_are_case_insensitive_and_multiline() -> None:
    text = "a <PRIVATE>line one\nline two</Private> b <private note='x'>c</private> d"
    assert scrub(text) == "a  b  d"


def test_unclosed_private_drops_the_rest() -> None:
    assert scrub("keep this <private> but not this\nnor this") == "keep this "


def test_stray_closing_tag_is_dropped() -> None:
    assert scrub("text</private> more") == "text more"


def test_secret_inside_private_span_is_gone_entirely() -> None:
    assert scrub("<private>sk-ant-api03-Xy7vQ2mN9pL4kR8sT1uW6zA3</private>ok") == "ok"


ORDINARY = """\
Yesterday I pushed commit 3eb6f2c5a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6 and tagged v2.1.0 at 10:30.
The request id was 550e8400-e29b-41d4-a716-446655440000; see https://example.com/docs?page=2.
We use sk-learn-style pipelines, and the bearer of bad news was Tom. Mail ana@example.com.
The password is too weak, says the form, and Password: required. Run pwd to see the folder.
My token of appreciation: a cake for Akiko. Her phone is 555 0101 and she lives on Main St.
"""


def test_ordinary_paragraph_is_unchanged() -> None:
    assert scrub(ORDINARY) == ORDINARY


def test_scrub_is_idempotent() -> None:
    text = " ".join(text for text, _ in SECRETS.values()) + " <private>x</private>"
    once = scrub(text)
    assert scrub(once) == once


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("My password is hunter2. Then I went home.", "My password is [REDACTED]. Then I went home."),
        ("The pwd was Tr0ub4dor! Anyway, lunch?", "The pwd was [REDACTED]! Anyway, lunch?"),
        ("password: abc123, and the user is bob.", "password: [REDACTED], and the user is bob."),
        ("DB_PASSWORD=s3cr3t; PORT=5432", "DB_PASSWORD=[REDACTED]; PORT=5432"),
        ('my password is "open sesame". Done.', 'my password is "[REDACTED]". Done.'),
        ("key sk-ant-api03-Xy7vQ2mN9pL4kR8sT1uW6zA3. Next one", "key [REDACTED]. Next one"),
        ("(passcode is 4711) ok", "(passcode is [REDACTED]) ok"),
    ],
)
def test_redaction_keeps_sentence_boundaries(text: str, expected: str) -> None:
    assert scrub(text) == expected
