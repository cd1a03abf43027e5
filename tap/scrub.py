"""Privacy scrubbing applied to every turn before it is chunked, gated, extracted or stored.

`scrub(text)` does three things, in this order:
1. removes tap's own memory blocks (`<recalled-memories>…</recalled-memories>`, tap.block_tags): a
   captured request that already carried one never stores tap's notes as conversation text;
2. removes `<private>…</private>` spans entirely, tags included (case-insensitive, across lines);
   an unclosed `<private>` drops everything after it, and a stray `</private>` is dropped;
3. replaces secrets with `[REDACTED]`: API keys and tokens of well-known shapes (Anthropic/OpenAI
   `sk-…`, GitHub `ghp_…`/`github_pat_…`, AWS `AKIA…` and `aws_secret_access_key = …`, Slack
   `xox?-…`, Google `AIza…`, JWTs, `Bearer …`, Telegram bot tokens, PEM private key blocks
   (OpenSSH and PuTTY keys included)), passwords in their obvious forms (`password: x`,
   `"password": "x"`, `PGPASSWORD=x`, `--password x`, `my password is x`, `the wifi password for
   the office is x`, `passcode: x`), PINs and door/alarm codes given as digits (`my PIN is 1234`),
   and credentials in connection strings (`scheme://user:pass@host`, `redis://:pass@host`,
   `…;Password=x;…`); then the shapes of tap.secret_shapes: card numbers (Luhn-checked), US SSNs,
   keys of well-known services (Stripe, GitLab, npm, …), tokens after a word that names one or
   random enough on their own (an AWS secret key), passwords said in other languages.

It is the one scrubber on every way into the store: ingested turns (tap.ingest.chunker.prepare_turns),
chunks again when the worker claims them (tap.extract.worker), and memories written by hand, through the
admin API or by import (tap.memories.service.MemoryService); the turn log is scrubbed before it is written
(tap.ingest.capture.TurnLog).

Invariants: pure and idempotent (`scrub(scrub(t)) == scrub(t)`); text without a memory block, a
private span or a secret comes back unchanged. A text of more than `LARGE_TEXT` characters is scrubbed in a helper
process (one, started on first need): each regex pass over it is one C call that holds the GIL for
its whole length, which would stall the proxy's event loop; in another process it only takes a core.
Patterns are anchored on key shapes or on an explicit key name, so
ordinary prose, commit hashes and UUIDs are left alone. Where a secret follows a label (`password:`,
`Bearer`, `user:`) the label is kept and only the value is replaced, so the sentence stays readable.
"""

from __future__ import annotations

import multiprocessing
import re
import threading
from concurrent.futures import ProcessPoolExecutor

from tap.block_tags import remove_blocks
from tap.secret_shapes import redact_shapes

__all__ = [
    "REDACTED",
    "redact_secrets",
    "remove_private",
    "scrub",
]

REDACTED = "[REDACTED]"

_PRIVATE_SPAN = re.compile(r"<private\b[^>]*>.*?</private\s*>", re.IGNORECASE | re.DOTALL)
_PRIVATE_OPEN = re.compile(r"<private\b[^>]*>.*", re.IGNORECASE | re.DOTALL)
_PRIVATE_STRAY = re.compile(r"</private\s*>", re.IGNORECASE)

_PEM = re.compile(
    r"-----BEGIN (?P<label>[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END (?P=label)-----|\Z)",
    re.DOTALL,
)
# A PuTTY private key file (.ppk): from its first line to its MAC (or the end of the text).
_PUTTY = re.compile(r"PuTTY-User-Key-File-\d+:.*?(?:Private-MAC:[ \t]*[0-9A-Fa-f]+|\Z)", re.DOTALL)

# Whole-match secrets: the token itself is recognisable by its shape.
_TOKEN_SHAPES: tuple[re.Pattern[str], ...] = (
    # Anthropic (sk-ant-…) and OpenAI (sk-…, sk-proj-…): demand a digit so "sk-learn-…" survives.
    re.compile(r"\bsk-(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{10,}"),
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]+)?"),
    # any signed JWT: a JSON header (always "eyJ…") and two more base64url parts
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    re.compile(r"\b\d{6,12}:AA[A-Za-z0-9_-]{30,}"),
)

_VALUE = r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s,;&\"']+)"
_SECRET_KEY = (
    r"(?:password|passwd|pwd|passcode|passphrase|aws_secret_access_key|secret_access_key|client_secret"
    r"|api[_-]?key|secret[_-]?key|access[_-]?token|auth[_-]?token)"
)
# Labelled secrets: group 1 is the label to keep, group 2 the value to replace.
# The key may carry a prefix: DB_PASSWORD=…, mysql-root-password: …, PGPASSWORD=…
_KEY_VALUE = re.compile(
    rf"(\b(?:[A-Za-z0-9]+[_-])*(?:[A-Za-z]{{1,8}}(?=pass))?{_SECRET_KEY}[\"']?\s*[:=]\s*)({_VALUE})", re.IGNORECASE
)
_LABELLED: tuple[re.Pattern[str], ...] = (
    re.compile(r"(\bbearer\s+)((?=[A-Za-z0-9._~+/-]*[0-9._~+/-])[A-Za-z0-9._~+/-]{12,}=*)", re.IGNORECASE),
    # scheme://user:password@host (the user may be empty: redis://:password@host)
    re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]*:)([^\s@/]+)(?=@)", re.IGNORECASE),
)
# a command-line option followed by its value: --password hunter2, --api-key sk-…
_OPTION = re.compile(
    r"((?<![\w-])--?(?:password|passwd|passphrase|api-key|token|secret)[ \t]+)((?!-)[^\s\"']+)", re.IGNORECASE
)

# What may stand between a secret's name and "is": "the wifi password *for the office* is x".
_ABOUT = r"(?:\s+(?:for|of|to|on|at|in)(?:\s+[\w'.-]+){1,4}?)?"
# "my password is hunter2", "the pwd was x": only when the value is not an ordinary word.
_SPOKEN_PASSWORD = re.compile(
    rf"(\b(?:password|passwd|pwd|passcode|passphrase){_ABOUT}\s+(?:is|was|will be)\s*:?\s+)"
    r"(\"[^\"\n]+\"|'[^'\n]+'|\S+)",
    re.IGNORECASE,
)
# "my PIN is 1234", "PIN: 0921", "the door code is 4477": only digits, so "my PIN is wrong" stays.
_PIN = re.compile(
    r"(\b(?:pin|pin\s*code|pin\s*number|(?:door|alarm|gate|garage|entry|access|keypad|lock|safe|security)\s+code)"
    rf"{_ABOUT}(?:\s*[:=]\s*|\s+(?:is|was|will be)\s*:?\s*))(\d{{3,12}})\b",
    re.IGNORECASE,
)
_NOT_A_PASSWORD = frozenset(
    "a an the too not very so still now wrong incorrect correct weak strong expired invalid "
    "required missing saved stored changed reset same different long short secret safe secure "
    "in on at for of to and or but it this that my your his her their our "
    "being written somewhere something easy hard simple also just true false none null yes no".split()
)


_TRAILING_PUNCTUATION = re.compile(r"[.!?,;:)\]]+$")

# What every pattern above needs somewhere in its text (case ignored), lower-cased: a text that
# holds none of these cannot match any of them, and most turns hold no secret (running every pass
# of redact_secrets on every turn was a visible share of `tap serve`'s CPU under load, and even one
# regex of these alternatives costs far more than substring searches). Each is a
# literal part of the patterns: the shapes' prefixes, the key names (every _SECRET_KEY, _OPTION and
# _SPOKEN_PASSWORD name holds one), "bearer"; a PIN needs "pin" at a word's start, a connection
# string "://" and "@", a door or alarm code its label (_CODE_LABEL).
# tests/tap/test_scrub_cases.py checks that skipping changes no output.
_NEEDLES = tuple(
    "-----begin putty-user-key-file- sk- ghp_ gho_ ghu_ ghs_ ghr_ github_pat_ akia asia xox aiza eyj :aa "
    "password passwd passcode passphrase pwd secret api_key api-key apikey token bearer".split()
)
_PIN_WORD = re.compile(r"\bpin")  # _PIN's label starts a word ("pin" alone is in "shopping", "opinion")
_CODE_LABEL = re.compile(r"\b(?:door|alarm|gate|garage|entry|access|keypad|lock|safe|security)\s+code", re.IGNORECASE)
# IGNORECASE lets four non-ASCII letters match ASCII ones (the re docs): fold them before looking
_IGNORECASE_EXTRA = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def _may_hold_secret(text: str) -> bool:
    """False only when no pattern of redact_secrets can match the text (see _NEEDLES)."""
    lowered = (text if text.isascii() else text.translate(_IGNORECASE_EXTRA)).lower()
    if any(needle in lowered for needle in _NEEDLES):
        return True
    if "://" in lowered and "@" in lowered:
        return True
    if "pin" in lowered and _PIN_WORD.search(lowered):
        return True
    return "code" in lowered and _CODE_LABEL.search(text) is not None


_MAYBE_PRIVATE = re.compile(r"</?private\b", re.IGNORECASE)  # every private-span pattern starts so


def remove_private(text: str) -> str:
    """Drop `<private>…</private>` spans (an unclosed tag drops the rest of the text)."""
    if not _MAYBE_PRIVATE.search(text):
        return text
    text = _PRIVATE_SPAN.sub("", text)
    text = _PRIVATE_OPEN.sub("", text)
    return _PRIVATE_STRAY.sub("", text)


def _redact_value(match: re.Match[str]) -> str:
    """Keep the label (and quotes) of a labelled secret, replace the value unless it is a word.

    Sentence punctuation that ends an unquoted value ("my PIN is 1234. Then …") stays: it closes
    the sentence, and swallowing it would run the next sentence into this one.
    """
    value = match.group(2)
    if value.strip("\"'.,!?").lower() in _NOT_A_PASSWORD or REDACTED in value:
        return match.group(0)
    quote = value[0] if value[0] in "\"'" else ""
    if quote:
        return match.group(1) + quote + REDACTED + quote
    trailing = _TRAILING_PUNCTUATION.search(value)
    after = match.string[match.end() : match.end() + 1]
    ends_sentence = not after or after.isspace()  # "Password=Pa55w0rd!;Encrypt=…": the "!" is the password's
    tail = trailing.group(0) if trailing and trailing.start() > 0 and ends_sentence else ""
    return match.group(1) + REDACTED + tail


def _redact_labelled(text: str) -> str:
    """The patterns of this module (skipped when no needle is in the text)."""
    if not _may_hold_secret(text):
        return text
    text = _PEM.sub(REDACTED, text)
    text = _PUTTY.sub(REDACTED, text)
    for shape in _TOKEN_SHAPES:
        text = shape.sub(REDACTED, text)
    text = _KEY_VALUE.sub(_redact_value, text)
    for labelled in _LABELLED:
        text = labelled.sub(lambda m: m.group(1) + REDACTED, text)
    text = _OPTION.sub(_redact_value, text)
    text = _PIN.sub(_redact_value, text)
    return _SPOKEN_PASSWORD.sub(_redact_value, text)


def redact_secrets(text: str) -> str:
    """Replace keys, tokens, passwords, card numbers and national ids with `[REDACTED]`: the
    labelled patterns here, then the shapes of tap.secret_shapes."""
    return redact_shapes(_redact_labelled(text))


LARGE_TEXT = 256 * 1024
_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


def scrub(text: str) -> str:
    """Remove tap's memory blocks and private spans, redact secrets; everything else is returned as it was."""
    if len(text) > LARGE_TEXT:
        helper = _helper()
        scrubbed = helper.submit(scrub_here, text).result()
        # the pool's feeder thread holds the last message it sent (here the whole text, pickled)
        # until it sends another: a tiny one, so a 20 MB turn does not stay in memory
        helper.submit(len, "")
        return scrubbed
    return scrub_here(text)


def scrub_here(text: str) -> str:
    """`scrub` in the calling thread, whatever the size."""
    return redact_secrets(remove_private(remove_blocks(text)))


def _helper() -> ProcessPoolExecutor:
    """The process that scrubs large texts ("spawn": no copy of this process's threads and locks)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        return _pool
