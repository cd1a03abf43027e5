"""Questions that name a date: "what did I tell you on 3 June 2023?", "what did Maria donate in
December 2023?", "who did I have dinner with on May 3?".

Memories are dated (the day their turn was said, tap.recall.engine.memory_day), and a question that names
a calendar day or month asks about what was said then. `date_windows` reads the named dates of a
question as windows of UTC days: a named day (with or without its year, in either order: "3 June
2023", "June 3rd, 2023", "on May 3") covers that day and `DAY_SLACK` days either side (what was
said a day later about "yesterday" counts); a named month with its year ("in December 2023")
covers the month, with the same slack. A day without a year matches that day of any year.
Relative dates ("four weeks ago", "last Saturday") need the date the question is asked, which
recall does not know: they are left alone.

Pure functions, no I/O.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

__all__ = ["DAY_SLACK", "DateWindow", "date_windows"]

DAY_SLACK = 1
_MONTHS = {name: i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name[:3]: i for name, i in list(_MONTHS.items())})
_MONTH = r"(?P<{g}>" + "|".join(sorted((m.lower() for m in _MONTHS), key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{g}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<{g}>(?:19|20)\d\d)"
_PATTERNS = (
    # 3 June 2023, 3rd of June, 2023, 3 June
    re.compile(rf"\b{_DAY.format(g='d1')}\s+(?:of\s+)?{_MONTH.format(g='m1')}(?:,?\s+{_YEAR.format(g='y1')})?\b", re.I),
    # June 3, 2023, June 3rd 2023, June 3
    re.compile(rf"\b{_MONTH.format(g='m2')}\s+{_DAY.format(g='d2')}(?:,?\s+{_YEAR.format(g='y2')})?\b", re.I),
    # (in) December 2023
    re.compile(rf"\b{_MONTH.format(g='m3')},?\s+{_YEAR.format(g='y3')}\b", re.I),
)


@dataclass(frozen=True)
class DateWindow:
    """A span of UTC days named by a question: [first, last], or every year's `month`/`day` span
    when no year was given (`first` and `last` then hold year 2000)."""

    first: date
    last: date
    any_year: bool = False

    def holds(self, day: date) -> bool:
        """Whether the day is inside the window."""
        if not self.any_year:
            return self.first <= day <= self.last
        for year in (day.year - 1, day.year, day.year + 1):
            try:
                first, last = self.first.replace(year=year), self.last.replace(year=year)
            except ValueError:  # 29 February
                continue
            if first > last:
                last = last.replace(year=year + 1)
            if first <= day <= last:
                return True
        return False


def _window(day: int | None, month: int, year: int | None) -> DateWindow | None:
    slack = timedelta(days=DAY_SLACK)
    try:
        if day is None:
            if year is None:
                return None
            first = date(year, month, 1)
            last = date(year, month, calendar.monthrange(year, month)[1])
        else:
            first = last = date(year or 2000, month, day)
    except ValueError:  # 31 June, 30 February
        return None
    return DateWindow(first - slack, last + slack, any_year=year is None)


def date_windows(text: str) -> list[DateWindow]:
    """The windows of the dates a question names, in the order it names them (see the module
    docstring); empty when it names none."""
    found: list[tuple[int, DateWindow]] = []
    taken: list[tuple[int, int]] = []
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue  # "June 3, 2023" is one date, not also "June … 2023"
            groups = {k[0]: v for k, v in match.groupdict().items() if v}
            month = _MONTHS.get(groups["m"].lower().rstrip(".").capitalize()[:3])
            if month is None:
                continue
            window = _window(
                int(groups["d"]) if "d" in groups else None, month, int(groups["y"]) if "y" in groups else None
            )
            if window is not None:
                taken.append((match.start(), match.end()))
                found.append((match.start(), window))
    return [window for _, window in sorted(found, key=lambda pair: pair[0])]


def day_of(stamp: float) -> date | None:
    """The UTC day of a POSIX timestamp (None for 0 or out of range)."""
    if not stamp:
        return None
    try:
        return datetime.fromtimestamp(stamp, UTC).date()
    except (OverflowError, OSError, ValueError):
        return None
