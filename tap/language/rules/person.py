"""First person → third person: a statement names whom it is about.

A user's "I moved to Lisbon" becomes "The user moved to Lisbon"; in a chat between named people it
becomes "Caroline moved to Lisbon". `subject_for(speaker)` gives the name to use ("the user" for
the unnamed default speaker). `rewrite_first_person` replaces I / me / my / mine / myself and fixes
the verb that follows "I" ("I love" → "the user loves", "I'm" → "the user is", "I don't" → "the
user doesn't"); `rewrite_we` handles the plural: "let's X" is a decision of the speaker; in talk
about work (code, a project, a team, a stack) "we" is the speaker's team ("we use Postgres" →
"the user's team uses Postgres"); otherwise "we" is read as the speaker (with others): "we moved
to Lisbon" → "the user moved to Lisbon", an approximation that keeps the statement about its owner.

Invariants: pure; words inside the sentence other than the pronouns and the verb after them are
kept as written (recall is partly lexical: names, numbers and rare words must survive).
"""

from __future__ import annotations

import re

__all__ = [
    "COMMON_VERBS",
    "WORK_CONTEXT",
    "capitalise",
    "is_work_talk",
    "name_listener",
    "rewrite_first_person",
    "rewrite_we",
    "subject_for",
    "third_person",
]

UNNAMED_USER = "User"
_ADVERBS = (
    "also|just|still|even|never|always|often|sometimes|already|kinda|sorta|mostly|only|now|too|so"
    "|recently|finally|really|actually|totally|definitely|absolutely|usually|honestly|literally"
    "|seriously|truly|genuinely|personally|especially|certainly|probably|hardly|rarely|barely|all|no longer"
    "|currently|mainly|primarily|mostly|generally|typically|normally|regularly|occasionally|frequently|then"
)
_CONTRACTIONS = (
    (r"(?:'m|’m| am)", "is"),
    (r"(?:'ve|’ve| have)", "has"),
    (r"(?:'ll|’ll)", "will"),
    (r"(?:'d|’d)", "would"),
)
_POSSESSIVE = re.compile(r"\b[Mm]y\b|\b[Mm]ine\b")
_OBJECT = re.compile(r"\b[Mm]e\b|\b[Mm]yself\b")
_IRREGULAR_THIRD = {"am": "is", "are": "is", "be": "is", "have": "has", "do": "does", "don't": "doesn't"}
_IRREGULAR_THIRD |= {"don’t": "doesn’t", "haven't": "hasn't", "haven’t": "hasn’t", "go": "goes"}
_KEEP_VERB = frozenset(
    "will would can could should might must may shall did didn't was wasn't were had can't cannot "
    "couldn't wouldn't shouldn't won't gotta gonna wanna used went got made took saw met ran began "
    "bought gave found won wrote read built left lost became came felt kept thought told said heard "
    "knew taught brought caught sold sent spent stood understood held paid sat slept spoke drove ate "
    "drank swam sang flew grew threw drew wore hid rode broke chose forgot froze woke fell led lent "
    "meant put quit set shut let cut hit hurt cost beat bit fought overcame rang rose shook shot "
    "stole stuck struck swore swept swung tore wept withdrew and or but too as if when blown known shown "
    "grown thrown drawn flown been done gone seen taken given driven written eaten fallen forgotten "
    "gotten hidden ridden risen spoken stolen woken broken chosen frozen sworn torn worn begun sung".split()
)
_PRESENT_ED = frozenset("need feed bleed breed proceed succeed exceed speed weed seed heed embed shed wed bed".split())
_NOT_ADVERB_LY = frozenset({"apply", "reply", "rely", "supply", "multiply", "comply", "imply", "fly"})


def third_person(verb: str) -> str:
    """The verb as it follows a name: 'love' → 'loves', 'go' → 'goes', 'went' stays."""
    low = verb.lower()
    if low in _IRREGULAR_THIRD:
        return _IRREGULAR_THIRD[low]
    if low in _KEEP_VERB or (low.endswith("ed") and low not in _PRESENT_ED) or not low.isalpha():
        return verb
    prefix = re.match(r"^(?:re|over|under|out|mis|un|fore|with)(?=[a-z]{3,})", low)
    if prefix and low[prefix.end() :] in _KEEP_VERB:
        return verb  # rewrote, overtook, undid
    if low.endswith("ly") and low not in _NOT_ADVERB_LY:
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def _rewrite_subject(text: str, token: str, name: str) -> str:
    """Replace the subject pronoun `token` ('I', or the 'WE' marker) with `name`, fixing its verb
    and a second verb that shares the subject ("I live in Berlin and work at Acme")."""
    for suffix, verb in _CONTRACTIONS:
        text = re.sub(rf"\b{token}{suffix}\b", f"{name} {verb}", text)
    text = re.sub(
        rf"(?<!\band )\b{token}\b(?P<adverbs>(?:\s+(?:{_ADVERBS}))*)\s+(?P<verb>[A-Za-z'’]+)"
        rf"(?P<rest>[^,;.!?]*?\b(?:and|but|or)\s+)?(?P<second>{COMMON_VERBS})?\b",
        lambda m: (
            f"{name}{m.group('adverbs')} {third_person(m.group('verb'))}"
            + (m.group("rest") or "")
            + (third_person(m.group("second")) if m.group("second") and m.group("rest") else m.group("second") or "")
        ),
        text,
    )
    return re.sub(rf"\b{token}\b", name, text)


COMMON_VERBS = (
    r"live|work|use|have|like|love|play|go|run|teach|study|own|need|want|prefer|enjoy|hate|drive|write|speak"
    r"|read|cook|walk|ride|commute|spend|make|build|coach|volunteer|train|swim|paint|sing|travel|visit|know|miss"
)


_LATER_PRONOUNS = (
    (re.compile(r"\bI(?:'m|’m| am)\b"), "they are"),
    (re.compile(r"\bI(?:'ve|’ve)\b"), "they have"),
    (re.compile(r"\bI(?:'ll|’ll)\b"), "they will"),
    (re.compile(r"\bI(?:'d|’d)\b"), "they would"),
    (re.compile(r"\bI was\b"), "they were"),
    (re.compile(r"\bI wasn'?t\b"), "they weren't"),
    (re.compile(r"\bI\b"), "they"),
    (re.compile(r"\b[Mm]y\b"), "their"),
    (re.compile(r"\b[Mm]ine\b"), "theirs"),
    (re.compile(r"\b[Mm]yself\b"), "themselves"),
    (re.compile(r"\b[Mm]e\b"), "them"),
)
# "my partner Sam and I are planning…": the speaker named first, so the name comes before the
# possessive it owns ("the user and their partner Sam are planning…", not "…Sam and they are…").
_THEY_AND_I = re.compile(
    r"(?P<lead>^|,\s+|\bwhen\s+|\bthat\s+)(?P<them>(?:my|our)\s+(?:[\w'’-]+\s+){0,3}?[\w'’-]+)\s+and\s+I\b"
)
_FIRST_MENTION = re.compile(r"\b(?:I|[Mm]y|[Mm]ine|[Mm]e|[Mm]yself)\b")


def rewrite_first_person(sentence: str, name: str) -> str:
    """Replace I/me/my with the speaker's name, fixing the verb that follows 'I'; once the name
    has been said, later pronouns become 'they' / 'their' / 'them' ("the user moved to Lisbon and
    they love it"), which reads as one statement about one person."""
    text = re.sub(r"(?<![\w.])i(?=['’\s]|$)", "I", sentence)
    text = _THEY_AND_I.sub(lambda m: f"{m.group('lead')}I and {m.group('them')}", text)
    first = _FIRST_MENTION.search(text)
    if first is None:
        return text
    cut = _clause_end(text, first.start())
    head, tail = text[:cut], text[cut:]
    head = _rewrite_subject(head, "I", name)
    head = _POSSESSIVE.sub(f"{name}'s", head)
    head = _OBJECT.sub(name, head)
    for pattern, replacement in _LATER_PRONOUNS:
        tail = pattern.sub(replacement, tail)
    return head + tail


def _clause_end(text: str, start: int) -> int:
    """Where the first pronoun's own phrase ends: the name is used up to the first later pronoun."""
    later = _FIRST_MENTION.search(text, start + 1)
    if later is None:
        return len(text)
    # "I" followed by its contraction or verb belongs to the head; a later, separate pronoun does not
    return later.start()


WORK_CONTEXT = re.compile(
    r"\b(?:project|codebase|code|repo|repository|app|application|service|services|api|backend|front-?end"
    r"|database|db|deploy(?:ed|ing|s|ment)?|production|prod|staging|server|servers|stack|team|company|sprint"
    r"|release|framework|library|pipeline|ci|tests?|migrat\w*|infra(?:structure)?|cluster|microservices?"
    r"|orm|schema|endpoint|build|monorepo|startup|product|customers?|clients?|office|standup|on-?call|prs?"
    r"|pull requests?|merge|branch|commits?|reviews?|approvals?|master|main branch|dashboard|scraper|blog"
    r"|at work|for work|my job|our job)\b",
    re.IGNORECASE,
)
_LETS = re.compile(r"^let(?:'|’)?s\s+", re.IGNORECASE)
_WE_FORMS = (
    # "we both love hiking" → "I love hiking": with one subject, "both" / "all" would read as a verb
    (re.compile(r"\b([Ww]e)\s+(?:both|all)\b(?!\s+(?:of|the|my|our|these|those)\b)"), r"\1"),
    (re.compile(r"\b[Ww]e(?:'re|’re| are)\b"), "I am"),
    (re.compile(r"\b[Ww]e were\b"), "I was"),
    (re.compile(r"\b[Ww]e(?:'ve|’ve)\b"), "I have"),
    (re.compile(r"\b[Ww]e(?:'ll|’ll)\b"), "I will"),
    (re.compile(r"\b[Ww]e(?:'d|’d)\b"), "I would"),
    (re.compile(r"\b[Ww]e\b"), "I"),
    (re.compile(r"\b[Oo]urs\b"), "mine"),
    (re.compile(r"\b[Oo]urselves\b"), "myself"),
    (re.compile(r"\b[Oo]ur\b"), "my"),
    (re.compile(r"\b[Uu]s\b"), "me"),
)
_TEAM_FORMS = (
    (re.compile(r"\b[Oo]ur team\b"), "the team"),
    (re.compile(r"\b[Oo]urs\b"), "the team's"),
    (re.compile(r"\b[Oo]urselves\b"), "the team"),
    (re.compile(r"\b[Oo]ur\b"), "the team's"),
    (re.compile(r"\b[Uu]s\b"), "the team"),
)
_HAS_WE = re.compile(r"\b(?:we|we're|we’re|we've|we’ve|we'll|we’ll|we'd|we’d|our|ours|us|ourselves)\b", re.IGNORECASE)


def subject_for(speaker: str) -> str:
    """How a statement names the speaker: 'the user' for the unnamed default, else the name."""
    return "the user" if speaker == UNNAMED_USER else speaker


def capitalise(text: str) -> str:
    """First letter upper-cased (only the first: names and acronyms inside stay as written)."""
    return text[:1].upper() + text[1:] if text else text


def is_work_talk(sentence: str) -> bool:
    """Whether a sentence is about work: code, a project, a team, a stack, a company."""
    return WORK_CONTEXT.search(sentence) is not None


def rewrite_we(sentence: str, subject: str) -> str:
    """'we/our/us' rewritten: '<subject>'s team' in work talk, else the subject itself (through
    'I', which rewrite_first_person then names). 'let's X' becomes '<subject> decided to X'."""
    if _LETS.match(sentence):
        return _LETS.sub(f"{subject} decided to ", sentence)
    if not _HAS_WE.search(sentence):
        return sentence
    if not is_work_talk(sentence):
        for pattern, replacement in _WE_FORMS:
            sentence = pattern.sub(replacement, sentence)
        return sentence
    for pattern, replacement in _TEAM_FORMS:
        sentence = pattern.sub(replacement, sentence)
    for pattern, replacement in _WE_FORMS[:7]:
        sentence = pattern.sub(replacement.replace("I", "WE", 1), sentence)
    return _rewrite_subject(sentence, "WE", f"{subject}'s team")


_LISTENER_FORMS = (
    (re.compile(r"\byou(?:'re|’re| are)\b", re.IGNORECASE), "{name} is"),
    (re.compile(r"\byou(?:'ve|’ve| have)\b", re.IGNORECASE), "{name} has"),
    (re.compile(r"\byou(?:'ll|’ll)\b", re.IGNORECASE), "{name} will"),
    (re.compile(r"\byou(?:'d|’d)\b", re.IGNORECASE), "{name} would"),
    (re.compile(r"\byou were\b", re.IGNORECASE), "{name} was"),
    (re.compile(r"\byours\b", re.IGNORECASE), "{name}'s"),
    (re.compile(r"\byour\b", re.IGNORECASE), "{name}'s"),
    (re.compile(r"\byourself\b", re.IGNORECASE), "{name}"),
    (re.compile(r"\byou\b", re.IGNORECASE), "{name}"),
)


def name_listener(sentence: str, listener: str) -> str:
    """'you' / 'your' replaced by the listener's name ('Melanie', 'the assistant'); the verb after
    "you're" / "you've" follows the name."""
    for pattern, replacement in _LISTENER_FORMS:
        sentence = pattern.sub(replacement.format(name=listener), sentence)
    return sentence
