"""Relative dates → absolute phrases, resolved against the turn's own timestamp.

"last/next/this X" name their direction; a bare weekday or month needs a preposition ("on Friday",
"in July") and then follows the sentence's tense (future words → the coming one, past verbs → the
previous one; no tense: the coming weekday or the nearest month); "the last year" (a duration) and
"in July 2022" (already absolute) are left alone. `resolve_dates` removes each expression it
resolves from the sentence and returns the absolute phrases, which the extractor appends:
"Caroline moved to Lisbon (around April 2023)".

Invariants: pure and deterministic; without a timestamp nothing is resolved.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from tap.ingest.chunker import utc_date
from tap.language.gate import MONTHS, WEEKDAYS
from tap.language.rules.text import FUTURE_GOING_TO

__all__ = ["MAX_AGO", "format_day", "resolve_dates", "sentence_tense", "collapse_leftovers"]

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
    r"\b(?:was|were|went|did|had|got|made|took|saw|met|ran|gave|came|ago|last|yesterday|[a-z]{2,}ed"
    r"|paid|bought|sold|left|lost|found|told|said|felt|kept|sent|spent|won|wrote|drove|flew|ate|drank|began"
    r"|broke|chose|fell|forgot|heard|held|knew|rode|sang|sat|slept|spoke|stood|swam|taught|thought|threw"
    r"|woke|wore|brought|caught|fought|built|became|grew|drew|shook|struck|hung|dug|stuck)\b",
    re.IGNORECASE,
)
# "a dog named Rex", "my sister is called Ana": a name given, not something done (but "I named")
_NAMING = re.compile(r"(?<!\bI )(?<!\bwe )(?<!\bWe )(?<!\bthey )(?<!\bhe )(?<!\bshe )\b(?:named|called)(?=\s+[A-Z])")
_NOT_PAST = frozenset("need interested excited tired married scared bored worried used red bed".split())
_FUTURE = re.compile(
    rf"\b(?:will|'ll|’ll|{FUTURE_GOING_TO}|gonna|plan|planning|next|upcoming|soon|can't wait|looking forward"
    r"|hope to|want to|tomorrow|coming|(?<!was )(?<!were )(?:expecting|due))\b",
    re.IGNORECASE,
)


def sentence_tense(text: str) -> int:
    """+1 when the sentence speaks of the future, -1 of the past, 0 when it does not say."""
    if _FUTURE.search(text):
        return 1
    past = (word.lower() for word in _PAST.findall(_NAMING.sub("", text)))
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
    elif direction == 0 and not which and month < ref.month and ref.month - month >= 6:
        year += 1  # half a year either way: the coming one ("the baby is due in June", said in December)
    elif direction == 0 and not which and month > ref.month and month - ref.month > 6:
        year -= 1
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


# Where a clause ends, for the tense a date takes: "my son starts school in September and we still
# haven't picked a backpack" — "picked" is another clause's past.
_CLAUSE_BOUNDARY = re.compile(r"[,;:]\s+|\s+(?:and|but|so|because|although|while|whereas)\s+", re.IGNORECASE)


def resolve_dates(text: str, timestamp: float) -> tuple[str, list[str]]:
    """Remove relative date expressions from `text` and return them as absolute phrases. A bare
    weekday or month takes the tense of its own clause, else of the sentence."""
    ref = utc_date(timestamp)
    if ref is None:
        return text, []
    sentence = sentence_tense(text)
    phrases: list[str] = []

    def tense_at(match: re.Match[str]) -> int:
        return _clause_tense(text, match.start(), match.end(), sentence)

    def replace(match: re.Match[str]) -> str:
        resolved = _when(match, ref, tense_at(match))
        if resolved is None:
            return match.group(0)
        bare, phrase = resolved
        prep = (match.group("prep") or "").lower()
        phrases.append(f"{prep} {bare}" if prep in _BOUNDARY_PREPS else phrase)
        return ""

    return collapse_leftovers(_RELATIVE.sub(replace, text)), phrases


def _clause_tense(text: str, start: int, end: int, sentence: int) -> int:
    """The tense of the clause holding text[start:end]; the sentence's when that clause is only a
    few words ("In March, I was in Rome") or when it speaks of no time and the sentence of the future."""
    cuts = list(_CLAUSE_BOUNDARY.finditer(text))
    begin = max((m.end() for m in cuts if m.end() <= start), default=0)
    finish = min((m.start() for m in cuts if m.start() >= end), default=len(text))
    rest = text[begin:start] + " " + text[end:finish]
    if len(rest.split()) < 3:
        return sentence
    own = sentence_tense(rest)
    return own if own or sentence < 0 else sentence


def collapse_leftovers(text: str) -> str:
    """Collapse the whitespace and stray punctuation left behind by removed words."""
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"\s+([,.!?;:…])", r"\1", text)
    text = re.sub(r",(?=[,.!?;:…])|^[\s,;:.-]+", "", text)
    return text.strip()
