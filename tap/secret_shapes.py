"""Secrets the labelled patterns of tap.scrub do not see: numbers and keys recognised by their shape
and checked, tokens recognised by their randomness, passwords said in other languages.

`redact_shapes(text)` replaces with `[REDACTED]`:
- payment card numbers: 13-19 digits, plain or grouped by single spaces or dashes, of a card
  network's prefix and length, that pass the Luhn check (`4111 1111 1111 1111`, `5555-5555-5555-4444`,
  `378282246310005`); an order number or a millisecond timestamp fails one of the three;
- US social security numbers written `123-45-6789` (an area of 000, 666 or 9xx, a group of 00 or a
  serial of 0000 is no SSN), and nine digits right after "SSN" / "social security number";
- service keys of well-known shapes (the shapes secrets scanners such as detect-secrets and gitleaks
  look for): Stripe (`sk_live_…`, `rk_live_…`, test keys, `whsec_…`), GitLab `glpat-…`, npm, PyPI,
  SendGrid, Slack webhooks, Twilio `SK…`, Hugging Face `hf_…`, Shopify, DigitalOcean, Square, Mailchimp;
- a token after a word that names one ("token", "secret", "key", "pw", "password", …): 20 or more
  characters with a digit and a letter (`token 3f9a…` of 40 hex digits, `my api key: Zx81…`);
- a token alone, with no name at all, of the AWS secret access key's shape: 40 characters of
  letters, digits, `+` and `/` mixing upper case, lower case and digits, whose characters are random
  (Shannon entropy of at least 4.0 bits a character: identifiers and paths are far below; hex
  hashes and UUIDs have no upper case; base64 lines of public keys are 64 long);
- passwords said in other languages and in shorthand: "mein Passwort ist X", "mon mot de passe est X",
  "la contraseña es X", "a senha é X", "пароль: X", "パスワードは X", "wifi pw: X", "my password's X".

Pure and idempotent, like tap.scrub; each pattern is anchored on digits, a key's prefix or a label,
so ordinary prose (and the dev conversations of bench/quality) passes unchanged (tests/tap/test_secret_shapes.py).
"""

from __future__ import annotations

import math
import re
from collections import Counter

REDACTED = "[REDACTED]"

# -- cards and SSNs ---------------------------------------------------------------------------------

_CARD = re.compile(r"(?<![\w.-])\d(?:[ -]?\d){12,18}(?![\w-]|\.\d)")
# (prefix pattern, allowed lengths): the networks' published ranges
_NETWORKS: tuple[tuple[re.Pattern[str], frozenset[int]], ...] = (
    (re.compile(r"4"), frozenset({13, 16, 19})),  # Visa
    (re.compile(r"5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)"), frozenset({16})),  # Mastercard
    (re.compile(r"3[47]"), frozenset({15})),  # American Express
    (re.compile(r"6(?:011|5|4[4-9])"), frozenset({16, 17, 18, 19})),  # Discover
    (re.compile(r"35(?:2[89]|[3-8]\d)"), frozenset({16, 17, 18, 19})),  # JCB
    (re.compile(r"3(?:0[0-5]|[689])"), frozenset({14, 16, 17, 18, 19})),  # Diners Club
    (re.compile(r"62"), frozenset({16, 17, 18, 19})),  # UnionPay
    (re.compile(r"5[06-9]|6\d"), frozenset({12, 13, 14, 15, 16, 17, 18, 19})),  # Maestro
)
_SSN = re.compile(r"(?<![\w-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\w-])")
_SSN_LABELLED = re.compile(
    r"(\b(?:ssn|social\s+security(?:\s+(?:number|no\.?|#))?)\s*(?:is|was|:|=|#)?\s*)(\d{3}[ -]?\d{2}[ -]?\d{4})\b",
    re.IGNORECASE,
)


def luhn_ok(digits: str) -> bool:
    """Whether a string of digits passes the Luhn check (every card number does)."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    """The run redacted where a card number starts it: the longest leading groups that are one
    (a card followed by a year, "4111 1111 1111 1111 2024", is still found)."""
    groups = re.split(r"([ -])", match.group())  # digits, separator, digits, ...
    for end in range(len(groups), 0, -2):
        digits = "".join(groups[:end:2])
        if len(digits) < 12:
            break
        known = any(prefix.match(digits) and len(digits) in lengths for prefix, lengths in _NETWORKS)
        if known and luhn_ok(digits):
            return REDACTED + "".join(groups[end:])
    return match.group()


# -- keys of well-known services ------------------------------------------------------------------

_SERVICE_KEYS = re.compile(
    "|".join(
        (
            r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}",  # Stripe secret and restricted keys
            r"\bwhsec_[0-9A-Za-z]{24,}",  # Stripe webhook signing secret
            r"\bglpat-[0-9A-Za-z_-]{20,}",  # GitLab personal access token
            r"\bnpm_[0-9A-Za-z]{36}\b",  # npm
            r"\bpypi-AgEIcHlwaS5vcmc[0-9A-Za-z_-]{50,}",  # PyPI upload token
            r"\bSG\.[0-9A-Za-z_-]{22}\.[0-9A-Za-z_-]{43}\b",  # SendGrid
            r"https://hooks\.slack\.com/services/T[0-9A-Za-z]+/B[0-9A-Za-z]+/[0-9A-Za-z]+",  # Slack webhook
            r"\bSK[0-9a-f]{32}\b",  # Twilio API key
            r"\bhf_[A-Za-z]{34}\b",  # Hugging Face
            r"\bshp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}\b",  # Shopify
            r"\bdo[por]_v1_[0-9a-f]{64}\b",  # DigitalOcean
            r"\bsq0(?:atp|csp)-[0-9A-Za-z_-]{22,43}",  # Square
            r"\b[0-9a-f]{32}-us\d{1,2}\b",  # Mailchimp
        )
    )
)

# -- tokens after a word that names one, and tokens alone ----------------------------------------

_TOKEN_CHARS = r"[A-Za-z0-9+/_=.-]"
_NAMED = re.compile(
    r"(\b(?:token|secret|api[ _-]?key|access[ _-]?key|secret[ _-]?key|private[ _-]?key|auth[ _-]?key|"
    r"credentials?|pw|pwd|password|passwort|passwd)\b(?:'s)?"
    r"(?:[ \t]+[A-Za-z]+){0,3}?[ \t]*(?:is|was|:|=|->)?[ \t]*)"
    rf"((?={_TOKEN_CHARS}*\d)(?={_TOKEN_CHARS}*[A-Za-z])(?![A-Za-z_]+=){_TOKEN_CHARS}{{20,}})",
    re.IGNORECASE,
)
_ALONE = re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/]{40}(?![A-Za-z0-9+/_=-])")
MIN_ENTROPY = 4.0


def entropy(text: str) -> float:
    """Shannon entropy of the characters, in bits per character."""
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _alone(match: re.Match[str]) -> str:
    token = match.group()
    mixed = any(c.isupper() for c in token) and any(c.islower() for c in token) and any(c.isdigit() for c in token)
    return REDACTED if mixed and entropy(token) >= MIN_ENTROPY else token


# -- passwords said ---------------------------------------------------------------------------------

_SAID_LABELS = (
    r"password's|pw|passwort|kennwort|mot\s+de\s+passe|contraseña|contrasena|clave|senha|wachtwoord|"
    r"hasło|haslo|пароль|parola|lösenord|losenord|adgangskode|passord|salasana|şifre|sifre|heslo|"
    r"密码|密碼|パスワード|비밀번호"
)
_SAID = re.compile(
    rf"((?<![A-Za-zÀ-ÿ0-9_])(?:{_SAID_LABELS})(?![A-Za-zÀ-ÿ0-9_])"  # Latin letters only: CJK runs on
    r"(?:\s+(?:für|fur|pour|para|do|da|de|du|van|voor|от|для|per)(?:\s+[\w'-]+){1,3}?)?"
    r"(?:\s*(?::|=|は|：)\s*|\s+(?:ist|est|es|é|e|è|is|to|это)\s+|(?<='s)\s+))"
    r"(\"[^\"\n]+\"|'[^'\n]+'|«[^»\n]+»|「[^」\n]+」|[^\s\"'«「]*\w[^\s\"'«「]*)",
    re.IGNORECASE,
)
_NOT_A_VALUE = frozenset(
    "a an the my your his her our their is was not too very wrong incorrect falsch faux falso errado "
    "fout błędne неверный zu trop muy muito erforderlich requis requerido obrigatório vergessen oublié "
    "olvidado esquecido vergeten zapomniane забыл changed geändert changé cambiado alterado reset "
    "expired abgelaufen expiré caducado expirado on in at for of to and or le la el o der die das".split()
)


def _said(match: re.Match[str]) -> str:
    value = match.group(2)
    bare = value.strip("\"'«»「」.,!?;:").lower()
    if not bare or bare in _NOT_A_VALUE or REDACTED in value:
        return match.group(0)
    for quote_open, quote_close in (('"', '"'), ("'", "'"), ("«", "»"), ("「", "」")):
        if value.startswith(quote_open) and value.endswith(quote_close) and len(value) > 1:
            return match.group(1) + quote_open + REDACTED + quote_close
    trailing = re.search(r"[.!?,;:)\]]+$", value)
    after = match.string[match.end() : match.end() + 1]
    tail = trailing.group() if trailing and trailing.start() > 0 and (not after or after.isspace()) else ""
    return match.group(1) + REDACTED + tail


def _named(match: re.Match[str]) -> str:
    return match.group(0) if REDACTED in match.group(2) else match.group(1) + REDACTED


# Each pattern runs only when the text holds a literal part of it: substring checks cost a fraction
# of one search of the patterns (docs/measurements.md).
_FOUR_DIGITS = re.compile(r"\d{4}")
_SERVICE_NEEDLES = tuple("sk_ rk_ whsec_ glpat- npm_ pypi- SG. hooks.slack.com SK hf_ shp _v1_ sq0 -us".split())
_NAMED_NEEDLES = ("token", "secret", "key", "credential", "pw", "pass")
_SAID_NEEDLES = (
    "password's", "pw", "passwort", "kennwort", "mot de passe", "contrase", "clave", "senha", "wachtwoord", "hasło",
    "haslo", "пароль", "parola", "lösenord", "losenord", "adgangskode", "passord", "salasana", "şifre", "sifre",
    "heslo", "密码", "密碼", "パスワード", "비밀번호",
)  # fmt: skip


def redact_shapes(text: str) -> str:
    """Replace the secrets of the module docstring with `[REDACTED]`."""
    lowered = text.lower()
    if _FOUR_DIGITS.search(text):
        text = _CARD.sub(_card, text)
        if "-" in text:
            text = _SSN.sub(REDACTED, text)
    if "ssn" in lowered or "social" in lowered:
        text = _SSN_LABELLED.sub(lambda m: m.group(1) + REDACTED, text)
    if any(needle in text for needle in _SERVICE_NEEDLES):
        text = _SERVICE_KEYS.sub(REDACTED, text)
    if any(needle in lowered for needle in _NAMED_NEEDLES):
        text = _NAMED.sub(_named, text)
    if any(needle in lowered for needle in _SAID_NEEDLES):
        text = _SAID.sub(_said, text)
    return _ALONE.sub(_alone, text)
