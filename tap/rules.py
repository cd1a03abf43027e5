"""The offline rule-based extractor: memories from plain conversation without any model.

`RulesExtractor.extract(chunk)` reads every turn of a chunk sentence by sentence and keeps the
informative sentences (first-person statements, preferences, plans, decisions, instructions,
statements with names, dates or numbers), skipping questions, greetings, reactions and fillers.
Each kept sentence becomes one `CandidateMemory`:
- wording stays as close to the source as possible (recall is partly lexical, so rare words,
  names and numbers must survive); only the speaker is made explicit: a sentence opening in the
  first person is rewritten ("I'm going to…" → "Caroline is going to…", "my kids" → "Caroline's
  kids"), any other sentence is attributed ("Caroline: The stories were so inspiring");
- "we" becomes "<speaker> and <other>" only where that is safe: after "let's", or in a chat
  between a person and an unnamed assistant;
- relative dates ("yesterday", "last month", "next Friday", "4 years ago") are resolved against the
  turn's timestamp, removed from the sentence and appended as an
  absolute phrase: "Caroline moved to Lisbon (around April 2023)";
- provenance is narrow: the turn the sentence came from, plus the question turn of the other
  speaker when the sentence is the first answer to it. Never a whole chunk. A brief answer
  ("Yes, twice.") carries its question: 'Ana asked "Have you been to Porto?"; Ben: Yes, twice';
- an unnamed assistant (speaker "Assistant") only contributes sentences with a strong signal
  (its promises, decisions, plans), not its explanations of general knowledge;
- `valid_from` is the timestamp of the turn the statement was made in.
`episode_memory(chunk)` is the exception by design: a compact transcript citing all its turns.

Date words are resolved with a few rules: "last/next/this X" name their direction; a bare weekday
or month needs a preposition ("on Friday", "in July") and then follows the sentence's tense
(future words → the coming one, past verbs → the previous one; no tense: the coming weekday or the
nearest month); "the last year" (a duration) and "in July 2022" (already absolute) are left alone.

Invariants: pure and deterministic (same chunk, same memories, same order); no memory without a
turn id; contents are unique within one extraction (duplicates merge their turn ids).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, timedelta

import msgspec

from tap.chunker import Chunk, Turn, utc_date
from tap.gate import MONTHS, STRONG, WEEKDAYS, heuristic_signals
from tap.records import Kind
from tap.scrub import REDACTED

__all__ = [
    "CandidateMemory",
    "RulesExtractor",
    "classify",
    "content_words",
    "episode_memory",
    "format_day",
    "importance",
    "is_informative",
    "merge_duplicates",
    "render_statement",
    "resolve_dates",
    "restore_subject",
    "rewrite_first_person",
    "rewrite_we",
    "split_sentences",
    "strip_lead",
    "third_person",
    "tidy",
]


class CandidateMemory(msgspec.Struct, frozen=True, kw_only=True):
    """A memory proposed by an extractor, before reconcile gives it an id and a scope."""

    content: str
    kind: Kind
    importance: int
    tags: list[str]
    turn_ids: list[str]
    valid_from: float


# --- dates -----------------------------------------------------------------------------------

_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_COUNTS |= {"eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3}
_COUNTS |= {"several": 3, "couple of": 2, "few": 3}
_SEASONS = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}
_BOUNDARY_PREPS = ("since", "until", "till", "before", "after", "by", "from")
MAX_AGO = 2000

_ALT_COUNT = "|".join(sorted(map(re.escape, _COUNTS), key=len, reverse=True))
_ALT_WEEKDAY = "|".join(WEEKDAYS)
_ALT_MONTH = "|".join(MONTHS)
_ALT_WEEKDAY_SHORT = "mon|tues|tue|wed|thurs|thu|fri|sat|sun"
_SHORT_DAYS = frozenset(_ALT_WEEKDAY_SHORT.split("|"))
_RELATIVE = re.compile(
    r"\b(?:(?P<prep>since|until|till|before|after|by|from|in|on|during|over|around|for)\s+)?(?:"
    r"(?P<day>the day before yesterday|the day after tomorrow|yesterday|today|tonight|tomorrow"
    r"|last night|this (?:morning|afternoon|evening))"
    rf"|(?P<count>\d+|{_ALT_COUNT})\s+(?P<ago>day|week|month|year)s?\s+ago"
    rf"|(?<!the\s)(?P<which>last|next|this|past|coming)\s+(?P<unit>week|weekend|month|year|spring|summer|fall"
    rf"|autumn|winter|{_ALT_WEEKDAY}|{_ALT_MONTH}|{_ALT_WEEKDAY_SHORT})\.?"
    rf"|(?P<weekday>{_ALT_WEEKDAY})"
    rf"|(?P<month>{_ALT_MONTH})"
    r")\b(?![,']?\s*\d|['’]s\b)",
    re.IGNORECASE,
)
_DIRECTION = {"last": -1, "past": -1, "this": 0, "next": 1, "coming": 1}
_PAST = re.compile(
    r"\b(?:was|were|went|did|had|got|made|took|saw|met|ran|gave|came|ago|last|yesterday|[a-z]{2,}ed)\b",
    re.IGNORECASE,
)
_NOT_PAST = frozenset("need interested excited tired married scared bored worried used red bed".split())
_FUTURE = re.compile(
    r"\b(?:will|'ll|’ll|going to|gonna|plan|planning|next|upcoming|soon|can't wait|looking forward"
    r"|hope to|want to|tomorrow|coming)\b",
    re.IGNORECASE,
)


def sentence_tense(text: str) -> int:
    """+1 when the sentence speaks of the future, -1 of the past, 0 when it does not say."""
    if _FUTURE.search(text):
        return 1
    past = (word.lower() for word in _PAST.findall(text))
    return -1 if any(word not in _NOT_PAST for word in past) else 0


def format_day(day: date) -> str:
    """'7 May 2023'."""
    return f"{day.day} {MONTHS[day.month - 1].title()} {day.year}"


def _month_name(year: int, month: int) -> str:
    return f"{MONTHS[month - 1].title()} {year}"


def _shift_month(ref: date, months: int) -> tuple[int, int]:
    """(year, month) `months` months away from ref's month."""
    index = ref.year * 12 + ref.month - 1 + months
    return index // 12, index % 12 + 1


def _weekday_near(ref: date, weekday: int, direction: int) -> date:
    """The given weekday strictly before (direction -1) or strictly after (+1) ref."""
    step = timedelta(days=direction)
    day = ref + step
    while day.weekday() != weekday:
        day += step
    return day


def _day_words(word: str, ref: date) -> tuple[str, str]:
    offsets = {"the day before yesterday": -2, "yesterday": -1, "last night": -1, "tomorrow": 1}
    offsets["the day after tomorrow"] = 2
    day = ref + timedelta(days=offsets.get(word.lower(), 0))
    return format_day(day), f"on {format_day(day)}"


def _ago(count: str, unit: str, ref: date) -> tuple[str, str] | None:
    n = int(count) if count.isdigit() else _COUNTS[count.lower()]
    unit = unit.lower()
    if n > MAX_AGO:
        return None  # "100000 days ago" is no date anyone means (and would overflow)
    if unit == "day":
        day = ref - timedelta(days=n)
        return format_day(day), f"around {format_day(day)}"
    if unit == "week":
        day = ref - timedelta(weeks=n)
        return f"around {format_day(day)}", f"around {format_day(day)}"
    if unit == "month":
        label = _month_name(*_shift_month(ref, -n))
        return f"around {label}", f"around {label}"
    return f"around {ref.year - n}", f"around {ref.year - n}"


def _weekend(which: str, ref: date) -> tuple[str, str]:
    saturday = ref - timedelta(days=(ref.weekday() - 5) % 7)  # the latest Saturday on or before ref
    if which in ("next", "coming"):
        saturday += timedelta(days=7)
    elif which == "this" and ref.weekday() < 5:
        saturday += timedelta(days=7)
    elif which in ("last", "past") and ref.weekday() in (5, 6):
        saturday -= timedelta(days=7)
    label = f"the weekend of {format_day(saturday)}"
    return label, label


def _season(which: str, name: str, ref: date) -> tuple[str, str]:
    start = _SEASONS[name.lower()]
    year = ref.year
    if which in ("last", "past"):
        year -= 1 if ref.month < start + 3 else 0
    elif which in ("next", "coming"):
        year += 1 if ref.month >= start else 0
    label = f"{name.lower()} {year}"
    return label, f"in {label}"


def _named_month(which: str, month: int, ref: date, tense: int) -> tuple[str, str]:
    """A month name: `which` (last/next/this) decides, else the tense, else the nearest such month."""
    direction = _DIRECTION.get(which, tense)
    year = ref.year
    if direction < 0 and (month > ref.month or (which and month == ref.month)):
        year -= 1
    elif direction > 0 and (month < ref.month or (which and month == ref.month)):
        year += 1
    elif direction == 0 and not which and abs(month - ref.month) > 6:
        year += 1 if month < ref.month else -1
    label = _month_name(year, month)
    return label, f"in {label}"


def _named_weekday(which: str, weekday: int, ref: date, tense: int) -> tuple[str, str]:
    """A weekday: `which` decides, else the tense, else the coming one ("the party is on Friday")."""
    if which == "this":
        day = ref if ref.weekday() == weekday else _weekday_near(ref, weekday, 1)
    else:
        day = _weekday_near(ref, weekday, -1 if _DIRECTION.get(which, tense) < 0 else 1)
    label = f"{WEEKDAYS[weekday].title()} {format_day(day)}"
    return label, f"on {label}"


def _which_unit(which: str, unit: str, ref: date, tense: int) -> tuple[str, str]:
    step = _DIRECTION[which]
    if unit == "week":
        label = {-1: "the week before", 0: "the week of", 1: "the week after"}[step] + f" {format_day(ref)}"
        return label, label
    if unit == "weekend":
        return _weekend(which, ref)
    if unit == "month":
        label = _month_name(*_shift_month(ref, step))
        return label, f"{'in' if step == 0 else 'around'} {label}"
    if unit == "year":
        return str(ref.year + step), f"in {ref.year + step}"
    if unit in _SEASONS:
        return _season(which, unit, ref)
    if unit in MONTHS:
        return _named_month(which, MONTHS.index(unit) + 1, ref, tense)
    weekday = next(i for i, name in enumerate(WEEKDAYS) if name.startswith(unit))
    return _named_weekday(which, weekday, ref, tense)


def _when(match: re.Match[str], ref: date, tense: int) -> tuple[str, str] | None:
    """(bare, phrase) for one relative expression, or None to leave it as written."""
    groups = match.groupdict()
    if groups["day"]:
        return _day_words(groups["day"], ref)
    if groups["count"]:
        return _ago(groups["count"], groups["ago"], ref)
    if groups["which"]:
        unit = groups["unit"]
        if unit.islower() and unit in _SHORT_DAYS:
            return None  # "this sun", "last sat": words, not days
        return _which_unit(groups["which"].lower(), groups["unit"].lower(), ref, tense)
    if groups["prep"] is None:
        return None  # a bare weekday or month is often not a date ("Sunday school", "may")
    if groups["weekday"]:
        return _named_weekday("", WEEKDAYS.index(groups["weekday"].lower()), ref, tense)
    name = groups["month"] or ""
    if name == name.lower():  # "in may", "in march": too likely to be verbs
        return None
    return _named_month("", MONTHS.index(name.lower()) + 1, ref, tense)


def resolve_dates(text: str, timestamp: float) -> tuple[str, list[str]]:
    """Remove relative date expressions from `text` and return them as absolute phrases."""
    ref = utc_date(timestamp)
    if ref is None:
        return text, []
    tense = sentence_tense(text)
    phrases: list[str] = []

    def replace(match: re.Match[str]) -> str:
        resolved = _when(match, ref, tense)
        if resolved is None:
            return match.group(0)
        bare, phrase = resolved
        prep = (match.group("prep") or "").lower()
        phrases.append(f"{prep} {bare}" if prep in _BOUNDARY_PREPS else phrase)
        return ""

    return tidy(_RELATIVE.sub(replace, text)), phrases


def tidy(text: str) -> str:
    """Collapse the whitespace and stray punctuation left behind by removed words."""
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"\s+([,.!?;:…])", r"\1", text)
    text = re.sub(r",(?=[,.!?;:…])|^[\s,;:.-]+", "", text)
    return text.strip()


# --- sentences -------------------------------------------------------------------------------

_ABBREVIATION = re.compile(r"\b(Mr|Mrs|Ms|Dr|Prof|St|Jr|Sr|vs|etc|approx|e\.g|i\.e)\.", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"”’')\]]*\s+|\n+")
_PHOTO = re.compile(
    r"\[\s*(?:shares?|shared|sends?|sent|posts?|posted)\s+(?:an?\s+)?(?:photo|picture|image|pic)"
    r"(?:\s+of)?\s*:?\s*(?P<caption>[^\]]+)\]",
    re.IGNORECASE,
)
_INTERJECTION = (
    r"hey|hi|hello|wow|whoa|oh|ah|aw+|yeah|yea|yep|yup|haha+|hah|lol|omg|hmm+|um+|uh|ok|okay|btw"
    r"|by the way|oh my god|oh wow"
)
_SOFT_INTERJECTION = (
    r"yes|no|nope|cool|great|awesome|nice|thanks|thank you|right|true|agreed|sure|totally|absolutely"
    r"|definitely|indeed|exactly|well|anyway|haha|sweet|amazing|wonderful|fantastic|congrats"
)
_CONNECTIVE = r"so|and|but|also|actually|honestly|anyway|well|plus|then|oh and|and yeah"
_LEAD = re.compile(
    rf"^(?:(?:{_INTERJECTION})\b[\s,!.…:-]*|(?:{_SOFT_INTERJECTION})\b\s*[,!.…:-]+\s*"
    rf"|(?:{_CONNECTIVE}),?\s+(?=(?:I|my|we|me)\b))+",
    re.IGNORECASE,
)
_REACTION = re.compile(
    r"^(?:that'?s|that’s|that is|that was|that sounds|sounds|so (?:cool|great|awesome|nice|happy|glad"
    r"|proud|sorry|sweet)|glad|good luck|congrat|thank|take care|talk (?:soon|later)|see you|have fun"
    r"|enjoy|it'?s (?:great|good|awesome|cool|nice|amazing|wonderful|so)|it’s (?:great|so)|what a|how (?:cool"
    r"|nice|great|awesome|sweet|fun)|i'?m (?:so |really )?(?:glad|happy|sorry|proud)|love (?:that|it|this)"
    r"|(?:really |so )?(?:cool|great|awesome|nice|amazing|wonderful|lovely|beautiful)\b|no worries"
    r"|you'?re welcome|any time|anytime|hope (?:you|it|that)|can'?t wait to (?:see|hear)"
    r"|keep (?:it up|going)|long time no)",
    re.IGNORECASE,
)
_SECOND_PERSON = re.compile(r"^(?:you|your|you'?re|you’re|you'?ve|you'?d|you'?ll|u|ur)\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"^(?:I|my|me and)\b", re.IGNORECASE)
_PERSONAL = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself|we|our|us)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d+")
_STOPWORDS = frozenset(
    "the a an and or but so of to in on at for with from by about as is are was were be been being am "
    "it its it's this that these those there here what which who whom when where why how i i'm i've "
    "i'll i'd me my mine we our us you your yours he she him her his they them their just really very "
    "too also so then than now well yeah yes no not dont don't can can't could would should will shall "
    "do does did done have has had get got gonna wanna like some any all more most much many lot lots "
    "thing things stuff way oh hey hi wow cool great good nice awesome amazing totally kinda sure "
    "one ever even still again always never sometimes".split()
)
MIN_WORDS = 4
_VOCATIVE_START = re.compile(r"^(?P<name>[A-Z][a-z]+)\s*[,!.:]+\s*")
_VOCATIVE_END = re.compile(r",\s*(?P<name>[A-Z][a-z]+)(?=\s*[.!?,]|$)")
PERSONAL_MIN_CONTENT = 2
PLAIN_MIN_CONTENT = 3
_DROPPED_SUBJECT = re.compile(
    r"^(?:gonna|going|planning|hoping|thinking|trying|working|heading|been|went|got|had|started"
    r"|finished|loved|just|lost|moved|bought|made|took|tried|visited|signed|joined|can't wait|can’t wait)\b",
    re.IGNORECASE,
)


def split_sentences(text: str) -> list[str]:
    """Sentences of a turn (abbreviations such as 'Dr.' do not end a sentence)."""
    protected = _ABBREVIATION.sub(lambda m: m.group(0)[:-1] + "\u2024", text)
    parts = (part.strip().replace("\u2024", ".") for part in _SENTENCE_END.split(protected))
    return [part for part in parts if part]


def content_words(text: str) -> list[str]:
    """Words of 3+ letters that carry meaning (stopwords removed)."""
    words = (word.lower().strip("'’-") for word in _WORD.findall(text))
    return [word for word in words if len(word) >= 3 and word not in _STOPWORDS]


def strip_lead(sentence: str, names: Sequence[str]) -> str:
    """Drop leading interjections, connectives and vocatives ('Wow, Mel!', 'So I…' → 'I…')."""
    previous = None
    while previous != sentence:
        previous = sentence
        sentence = _LEAD.sub("", sentence).strip()
        sentence = _VOCATIVE_START.sub(lambda m: _unless_name(m, names), sentence)
    return _VOCATIVE_END.sub(lambda m: _unless_name(m, names), sentence).strip()


def _unless_name(match: re.Match[str], names: Sequence[str]) -> str:
    """'' when the matched word is a speaker's name or its short form ('Mel' for Melanie)."""
    word = match.group("name").lower()
    is_name = len(word) >= 3 and any(name.lower().startswith(word) for name in names)
    return "" if is_name else match.group(0)


def is_informative(sentence: str, signals: Sequence[str]) -> bool:
    """Whether a (lead-stripped, subject-restored) sentence says something worth keeping."""
    if sentence.endswith("?") or len(sentence.split()) < MIN_WORDS:
        return False
    detail = any(name in signals for name in ("entity", "date", "quantity"))
    if _REACTION.match(sentence):
        return detail and len(content_words(sentence)) >= 3
    if _SECOND_PERSON.match(sentence):
        return "instruction" in signals
    words = len(content_words(sentence)) + (1 if detail else 0)
    if any(name not in ("entity", "date", "quantity", "contact") for name in signals):
        return words >= 1
    if _FIRST_PERSON.match(sentence) or _WE.match(sentence):
        return words >= PERSONAL_MIN_CONTENT
    return words >= PLAIN_MIN_CONTENT


def restore_subject(sentence: str) -> str:
    """Put back the 'I' that chat drops: 'Gonna try it' → "I'm gonna try it", 'Went home' → 'I went home'."""
    match = _DROPPED_SUBJECT.match(sentence)
    if not match:
        return sentence
    word = match.group(0).lower()
    prefix = "I've " if word == "been" else "I'm " if word.endswith(("ing", "gonna")) else "I "
    return prefix + word + sentence[match.end() :]


# --- rewriting -------------------------------------------------------------------------------

_ADVERBS = (
    "also|just|still|even|never|always|often|sometimes|already|kinda|sorta|mostly|only|now|too|so"
    "|recently|finally|really|actually|totally|definitely|absolutely|usually|honestly|literally"
    "|seriously|truly|genuinely|personally|especially|certainly|probably|hardly|rarely|barely|all"
)
_SUBJECT_VERB = re.compile(rf"\bI\b(?P<adverbs>(?:\s+(?:{_ADVERBS}))*)\s+(?P<verb>[A-Za-z'’]+)")
_CONTRACTIONS = (
    (re.compile(r"\bI(?:'m|’m| am)\b"), "{name} is"),
    (re.compile(r"\bI(?:'ve|’ve| have)\b"), "{name} has"),
    (re.compile(r"\bI(?:'ll|’ll)\b"), "{name} will"),
    (re.compile(r"\bI(?:'d|’d)\b"), "{name} would"),
    (re.compile(r"\b[Mm]y\b|\b[Mm]ine\b"), "{name}'s"),
    (re.compile(r"\b[Mm]e\b|\b[Mm]yself\b"), "{name}"),
)
_IRREGULAR_THIRD = {"am": "is", "be": "is", "have": "has", "do": "does", "don't": "doesn't"}
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
    if low.endswith("ly") and low not in _NOT_ADVERB_LY:
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def rewrite_first_person(sentence: str, name: str) -> str:
    """Replace I/me/my with the speaker's name, fixing the verb that follows 'I'."""
    text = re.sub(r"(?<![\w.])i(?=['’\s]|$)", "I", sentence)
    for pattern, replacement in _CONTRACTIONS[:4]:
        text = pattern.sub(replacement.format(name=name), text)
    text = _SUBJECT_VERB.sub(lambda m: f"{name}{m.group('adverbs')} {third_person(m.group('verb'))}", text)
    text = re.sub(r"\bI\b", name, text)
    for pattern, replacement in _CONTRACTIONS[4:]:
        text = pattern.sub(replacement.format(name=name), text)
    return text


_LETS = re.compile(r"^let(?:'|’)?s\s+", re.IGNORECASE)
_WE = re.compile(r"^we(?P<tail>'re|’re|'ve|’ve|'ll|’ll)?\b", re.IGNORECASE)
_WE_TAILS = {"'re": " are", "’re": " are", "'ve": " have", "’ve": " have", "'ll": " will", "’ll": " will"}


def rewrite_we(sentence: str, pair: str) -> str | None:
    """'let's X' / 'we X' with the pair ('Ana and Assistant') as subject, or None if neither."""
    if _LETS.match(sentence):
        return _LETS.sub(f"{pair} decided to ", sentence)
    match = _WE.match(sentence)
    if not match:
        return None
    tail = _WE_TAILS.get((match.group("tail") or "").lower(), "")
    return pair + tail + sentence[match.end() :]


# --- extraction ------------------------------------------------------------------------------

_BASE_IMPORTANCE: dict[Kind, int] = {
    "instruction": 4,
    "decision": 4,
    "preference": 3,
    "plan": 3,
    "event": 3,
    "fact": 2,
    "episode": 2,
}
_IMPERATIVE = re.compile(
    r"^(?:please\s+)?(?:always|never|don'?t ever|do not ever|from now on|remember (?:that|to)|make sure"
    r"|call me|answer|reply|respond|write|use|avoid)\b",
    re.IGNORECASE,
)
_SIGNAL_KINDS: tuple[tuple[str, Kind], ...] = (
    ("decision", "decision"),
    ("preference", "preference"),
    ("commitment", "plan"),
)
_ELLIPTICAL = re.compile(r"^(?:yes|yeah|yep|no|nope|definitely|probably|maybe|sure|not really)\b", re.I)


def classify(sentence: str, signals: Sequence[str]) -> Kind:
    """The kind of memory a sentence makes, by its strongest signal."""
    if _IMPERATIVE.match(sentence) and not _FIRST_PERSON.match(sentence):
        return "instruction"
    for signal, kind in _SIGNAL_KINDS:
        if signal in signals:
            return kind
    if "plan" in signals and _FUTURE.search(sentence):
        return "plan"
    if "event" in signals:
        return "event"
    return "fact"


def importance(kind: Kind, signals: Sequence[str], dated: bool, impersonal: bool) -> int:
    """1–5: the kind's base, +1 for personal facts and dated events/plans, -1 for impersonal remarks."""
    score = _BASE_IMPORTANCE[kind]
    if "self_statement" in signals:
        score += 1
    if dated and kind in ("event", "plan", "fact"):
        score += 1
    if impersonal:
        score -= 1
    return max(1, min(5, score))


def _pair(turn: Turn, other: Turn | None) -> str | None:
    """'Ana and Assistant' when 'we' can only mean these two speakers, else None."""
    if other is None or other.role == turn.role:
        return None
    assistant = turn if turn.role == "assistant" else other
    return f"{turn.speaker} and {other.speaker}" if assistant.speaker == "Assistant" else None


def render_statement(sentence: str, kind: Kind, turn: Turn, other: Turn | None) -> tuple[str, bool]:
    """The sentence as a self-contained statement, and whether it is only attributed (quoted)."""
    if kind == "instruction":
        return f"Instruction from {turn.speaker}: {sentence}", False
    if _FIRST_PERSON.match(sentence):
        return rewrite_first_person(sentence, turn.speaker), False
    pair = f"{turn.speaker} and {other.speaker}" if other and _LETS.match(sentence) else _pair(turn, other)
    rewritten = rewrite_we(sentence, pair) if pair else None
    if rewritten is not None:
        return rewrite_first_person(rewritten, turn.speaker), False
    return f"{turn.speaker}: {sentence}", True


def finish(body: str, dates: Sequence[str]) -> str:
    """Trim trailing punctuation and append the resolved dates in parentheses."""
    body = re.sub(r"[\s.!…,;:~]+$", "", body)
    return f"{body} ({'; '.join(dates)})" if dates else body


class _TurnContext(msgspec.Struct, frozen=True, kw_only=True):
    """What a turn's extraction needs to know about its neighbours."""

    turn: Turn
    other: Turn | None  # the nearest earlier (else later) turn by another speaker
    question: Turn | None  # the previous turn, when it is the other speaker's question
    names: tuple[str, ...]


class RulesExtractor:
    """Sentence-level, pattern-based extraction: the offline default extractor."""

    def __init__(self, *, min_words: int = MIN_WORDS) -> None:
        self.min_words = min_words

    def extract(self, chunk: Chunk) -> list[CandidateMemory]:
        """Candidate memories from every turn of the chunk, in turn order, without duplicates."""
        names = _speaker_names(chunk.turns)
        found: list[CandidateMemory] = []
        for index, turn in enumerate(chunk.turns):
            context = _TurnContext(
                turn=turn,
                other=_other_turn(chunk.turns, index),
                question=_question_turn(chunk.turns, index),
                names=names,
            )
            found += self.from_turn(context)
        return merge_duplicates(found)

    def from_turn(self, context: _TurnContext) -> list[CandidateMemory]:
        """Memories from one turn: shared photos, then its informative sentences."""
        text, photos = _take_photos(context.turn)
        found = photos
        question = context.question
        for sentence in split_sentences(text):
            clean = restore_subject(strip_lead(sentence, context.names))
            memory = self.from_sentence(sentence, clean, context, question)
            if memory is not None:
                found.append(memory)
            if clean:
                question = None  # only the first sentence past the greetings answers the question
        return found

    def from_sentence(
        self, sentence: str, clean: str, context: _TurnContext, question: Turn | None
    ) -> CandidateMemory | None:
        """One memory from one sentence (`clean`: lead-stripped), or None when not worth keeping."""
        if REDACTED in clean:
            return None  # a statement about a secret says nothing once the secret is gone
        if question is not None and _answers_briefly(sentence, clean):
            return _answer_memory(sentence, context.turn, question)
        signals = heuristic_signals(clean)
        if len(clean.split()) < self.min_words or not is_informative(clean, signals):
            return None
        if context.turn.speaker == "Assistant" and not STRONG.keys() & set(signals):
            return None  # an unnamed assistant's explanations are not memories; its promises are
        kind = classify(clean, signals)
        body, dates = resolve_dates(clean, context.turn.timestamp)
        statement, attributed = render_statement(body, kind, context.turn, context.other)
        cited = [question.id] if question is not None else []
        return CandidateMemory(
            content=finish(statement, dates),
            kind=kind,
            importance=importance(kind, signals, bool(dates), attributed and not _PERSONAL.search(body)),
            tags=list(signals),
            turn_ids=[*cited, context.turn.id],
            valid_from=context.turn.timestamp,
        )


def _speaker_names(turns: Sequence[Turn]) -> tuple[str, ...]:
    """Speaker names and their first names (for stripping vocatives like 'Thanks, Mel!')."""
    names: list[str] = []
    for turn in turns:
        for name in (turn.speaker, turn.speaker.split()[0] if turn.speaker.split() else ""):
            if name and name not in names:
                names.append(name)
    return tuple(sorted(names, key=len, reverse=True))


def _other_turn(turns: Sequence[Turn], index: int) -> Turn | None:
    speaker = turns[index].speaker
    earlier = [turn for turn in turns[:index] if turn.speaker != speaker]
    later = [turn for turn in turns[index + 1 :] if turn.speaker != speaker]
    return earlier[-1] if earlier else (later[0] if later else None)


def _question_turn(turns: Sequence[Turn], index: int) -> Turn | None:
    if index == 0:
        return None
    previous = turns[index - 1]
    sentences = split_sentences(previous.text)
    asked = bool(sentences) and sentences[-1].endswith("?")
    return previous if asked and previous.speaker != turns[index].speaker else None


def _last_question(text: str) -> str:
    questions = [sentence for sentence in split_sentences(text) if sentence.endswith("?")]
    return questions[-1] if questions else text


def _answers_briefly(sentence: str, clean: str) -> bool:
    """A short reply that only makes sense with the question ('Yes, twice.', 'Charlotte's Web!')."""
    if sentence.endswith("?") or len(clean.split()) >= 6:
        return False
    return bool(content_words(clean)) and (bool(_ELLIPTICAL.match(sentence)) or len(clean.split()) < 4)


def _answer_memory(answer: str, turn: Turn, question: Turn) -> CandidateMemory:
    asked = _last_question(question.text)
    signals = heuristic_signals(f"{asked} {answer}")
    kind = classify(answer, signals)
    return CandidateMemory(
        content=finish(f'{question.speaker} asked "{asked}"; {turn.speaker}: {answer}', []),
        kind="fact" if kind == "instruction" else kind,
        importance=2,
        tags=["answer", *signals],
        turn_ids=[question.id, turn.id],
        valid_from=turn.timestamp,
    )


def _take_photos(turn: Turn) -> tuple[str, list[CandidateMemory]]:
    """The turn text without photo markers, and one memory per shared photo."""
    memories = [
        CandidateMemory(
            content=f"{turn.speaker} shared a photo: {match.group('caption').strip()}",
            kind="event",
            importance=2,
            tags=["photo"],
            turn_ids=[turn.id],
            valid_from=turn.timestamp,
        )
        for match in _PHOTO.finditer(turn.text)
    ]
    return tidy(_PHOTO.sub(" ", turn.text)), memories


def merge_duplicates(memories: Sequence[CandidateMemory]) -> list[CandidateMemory]:
    """One memory per content (case-insensitive): turn ids united, highest importance kept."""
    merged: dict[str, CandidateMemory] = {}
    for memory in memories:
        key = memory.content.lower()
        seen = merged.get(key)
        if seen is None:
            merged[key] = memory
            continue
        ids = seen.turn_ids + [tid for tid in memory.turn_ids if tid not in seen.turn_ids]
        top = max(seen.importance, memory.importance)
        merged[key] = msgspec.structs.replace(seen, turn_ids=ids, importance=top)
    return list(merged.values())


def episode_memory(chunk: Chunk) -> CandidateMemory:
    """The whole chunk as one `episode`: 'Speaker: text' lines under a date header, citing every turn."""
    stamps = [turn.timestamp for turn in chunk.turns if utc_date(turn.timestamp)]
    days = sorted({day for day in map(utc_date, stamps) if day})
    header = "Conversation"
    if len(days) == 1:
        header += f" on {format_day(days[0])}"
    elif days:
        header += f" from {format_day(days[0])} to {format_day(days[-1])}"
    lines = [f"{turn.speaker}: {' '.join(turn.text.split())}" for turn in chunk.turns]
    return CandidateMemory(
        content="\n".join([header + ":", *lines]),
        kind="episode",
        importance=2,
        tags=["episode"],
        turn_ids=[turn.id for turn in chunk.turns],
        valid_from=min(stamps) if stamps else 0.0,
    )
