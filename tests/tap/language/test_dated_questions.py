"""Questions that name a date (tap.language.dated_questions) and recall's preference for that day's memories."""

from __future__ import annotations

from datetime import date

from tap.language.dated_questions import date_windows


def test_named_days_and_months_become_windows_with_a_day_of_slack() -> None:
    [day] = date_windows("What did Gina find for her store on 1 February, 2023?")
    assert (day.first, day.last) == (date(2023, 1, 31), date(2023, 2, 2))
    [same] = date_windows("What painting did Melanie show on October 13th 2023?")
    assert same.holds(date(2023, 10, 13)) and not same.holds(date(2023, 10, 16))
    [month] = date_windows("What did Maria donate in December 2023?")
    assert month.holds(date(2023, 12, 24)) and month.holds(date(2024, 1, 1)) and not month.holds(date(2024, 1, 3))
    [yearless] = date_windows("who did I have dinner with on May 3?")
    assert yearless.any_year and yearless.holds(date(2021, 5, 4)) and not yearless.holds(date(2021, 6, 3))


def test_no_date_no_window() -> None:
    assert date_windows("I may go 3 times this week") == []
    assert date_windows("what did I say four weeks ago?") == []  # relative: the asking date is unknown
    [june] = date_windows("on 31 June 2023")  # no such day: the month it names
    assert june.holds(date(2023, 6, 15))
    assert len(date_windows("between 3 June 2023 and July 9, 2023")) == 2
