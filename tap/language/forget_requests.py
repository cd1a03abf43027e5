"""A user asking, in the chat, that something be forgotten: "please forget my address", "don't
remember my phone number", "forget what I said about my ex", "forget I said that about Monzo",
"delete my address from your memory".

`forget_request(text)` returns the words of what is to be forgotten (("address",), ("phone",
"number")), or () when the text asks nothing of the kind. Extraction (tap.extract.pipeline) then forgets,
as `tap memories forget` does, every memory of the scope stated before the request that holds all
of those words: the statement with its versions, the verbatim excerpts of its turns, and the turns
themselves in the turn log and the queue. A request is only read where it is one: said to the
assistant, at the start of a sentence or after "please" / "can you" / "I want you to", about
something of the speaker's ("my …", "our …") or about something named ("forget what I said
about Monzo"). "I always forget my keys", "don't forget my birthday
is on Friday", "did you forget my order?" and "delete my branch" (work on code, not on memory) are
no requests; "delete my address from your memory" is.

Invariants: pure and deterministic; the words are lower-cased content words, at most four.
"""

from __future__ import annotations

import re

__all__ = ["forget_request", "names_all"]

# where a request starts: the text's or a sentence's start, or a word that asks ("ok, forget …");
# not any comma ("I can relax, forget my troubles, and get lost in a book" asks nothing)
_OPENING = (
    r"(?:^|[.!?;]\s+|\b(?:please|pls|plz|can you|could you|would you|will you|I want you to|I'd like you to"
    r"|I’d like you to|kindly|ok|okay|oh and|hey|so|also please|and please),?\s+)"
)
_WHAT = r"(?P<what>(?:my|our)\s+[^,.;:!?()]{1,40}?)"
_WHAT_ENDS = r"(?=\s*(?:[,.;:!?()]|$|\b(?:please|for good|permanently|from|and|or|I|it|thanks|thank you)\b))"
_FORGET = re.compile(
    _OPENING + r"(?:please\s+)?(?:forget|stop remembering|don'?t remember|don’t remember|do not remember"
    r"|don'?t store|don’t store|do not store|don'?t save|don’t save|do not save|don'?t keep|don’t keep|do not keep)"
    r"\s+(?:about\s+)?(?:what I (?:said|told you|mentioned|wrote) about\s+|everything about\s+|all about\s+)?"
    + _WHAT
    + _WHAT_ENDS,
    re.IGNORECASE,
)
# "forget (that) I said that about Monzo", "forget what I told you about Dana": about anything named
_SAID_ABOUT = re.compile(
    _OPENING + r"(?:please\s+)?(?:forget|disregard)\s+(?:that\s+|what\s+|everything\s+)?I\s+"
    r"(?:said|told you|mentioned|wrote)\s+(?:that\s+|this\s+|anything\s+)?about\s+"
    r"(?P<what>(?:my\s+|our\s+|the\s+)?[^,.;:!?()]{1,40}?)" + _WHAT_ENDS,
    re.IGNORECASE,
)
_FROM_MEMORY = re.compile(
    _OPENING
    + r"(?:please\s+)?(?:delete|remove|erase|wipe|drop|clear)\s+"
    + _WHAT
    + r"\s+from\s+(?:your\s+|the\s+)?(?:memory|memories|notes|records)\b",
    re.IGNORECASE,
)
# "forget my last message": a turn of this chat, which the model is told to disregard, not a memory
_CHAT_TURN = frozenset("message messages question questions prompt request reply answer comment typo".split())
_POLITE = re.compile(r"\b(?:can|could|would|will)\s+you\b", re.IGNORECASE)
_NOT_CONTENT = frozenset(
    "my our the a an of about all any every that this these those me us you your what which is are was were "
    "info information details stuff things thing "
    # what narrows the thing but may not be written beside it ("my old address": "the user's address is …")
    "old new current previous former latest real full exact whole entire".split()
)


def forget_request(text: str) -> tuple[str, ...]:
    """The words of what the text asks to be forgotten, or () (see the module docstring)."""
    for pattern in (_FROM_MEMORY, _SAID_ABOUT, _FORGET):
        for match in pattern.finditer(text):
            if text[match.end() :].lstrip().startswith("?") and not _POLITE.search(match.group(0)):
                continue  # a question about remembering ("did you forget my order?"), not a request
            words = [w.lower() for w in re.findall(r"[\w'’-]+", match.group("what"))]
            content = [w for w in words if w not in _NOT_CONTENT]
            if content and not _CHAT_TURN.intersection(content):
                return tuple(content[:4])
    return ()


def names_all(content: str, words: tuple[str, ...]) -> bool:
    """Whether the content names every word, as a whole word or its plural ("address" in "my
    addresses", not in "addressed": what is deleted must be what was asked for)."""
    have = {w.lower() for w in re.findall(r"[\w'’-]+", content)}
    return bool(words) and all(w in have or f"{w}s" in have or f"{w}es" in have for w in words)
