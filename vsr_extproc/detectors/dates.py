"""Dates as people write them: numeric (2024-05-12, 12.05.1990, 28. 4. 2013, 05/12/1990,
12.05.90) and
with a month's name in English, German, French or Spanish ("12 May 1990", "May 12, 1990",
"22nd of September, 1985"), read as the past dates (1900 to today) they can be.

A numeric date whose day and month could be either way round (05/12/1990) is both; one that
only one reading makes a date (13/05/1990) is that one.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator

_MONTHS: dict[str, int] = {}
for _number, _names in enumerate(
    (
        "january jan januar janvier enero",
        "february feb februar février fevrier febrero",
        "march mar märz maerz mars marzo",
        "april apr avril abril",
        "may mai mayo",
        "june jun juni juin junio",
        "july jul juli juillet julio",
        "august aug août aout agosto",
        "september sep sept septembre septiembre",
        "october oct oktober octobre octubre",
        "november nov novembre noviembre",
        "december dec dezember décembre decembre diciembre",
    ),
    start=1,
):
    _MONTHS.update(dict.fromkeys(_names.split(), _number))
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))

# a dot may be followed by a space, as Czech, Slovak, German, Hungarian and Korean write
# dates ("28. 4. 2013", "2013. 04. 28.")
_DATE_YMD = re.compile(r"(?<![\d.])(\d{4})([\-/]|\. ?)(\d{1,2})\2(\d{1,2})(?![\d]|\.\d)")
_DATE_DMY = re.compile(
    r"(?<![\d.])(\d{1,2})([\-/.])(\d{1,2})\2(\d{4}|\d{2})(?![\d]|\.\d)"
    r"|(?<![\d.])(\d{1,2})(\. )(\d{1,2})\. (\d{4})(?!\d)"  # spaced: only with the century
)
_DATE_DAY_MONTH = re.compile(
    rf"(?i)(?<!\d)(\d{{1,2}})(?:st|nd|rd|th)?\.?\s*(?:of\s+)?({_MONTH})\.?,?\s*(\d{{4}})(?!\d)"
)
_DATE_MONTH_DAY = re.compile(
    rf"(?i)\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})(?!\d)"
)


def _past_date(year: int, month: int, day: int) -> datetime.date | None:
    try:
        date = datetime.date(year, month, day)
    except ValueError:
        return None
    return date if datetime.date(1900, 1, 1) <= date <= datetime.date.today() else None


def _full_year(year: str) -> int:
    if len(year) == 4:
        return int(year)
    # a two-digit birth year is in the past: 85 is 1985, 07 is 2007 while that has passed
    short = int(year)
    return 2000 + short if 2000 + short <= datetime.date.today().year else 1900 + short


def written_dates(
    text: str, start: int = 0, end: int | None = None
) -> Iterator[tuple[int, int, frozenset[datetime.date]]]:
    """(start, end, the past dates it can be) of each date written in ``text[start:end]``,
    numeric or with a month's name; a date no reading of which is a past date is left out."""
    end = len(text) if end is None else end
    readings: list[tuple[re.Match[str], list[datetime.date | None]]] = []
    for match in _DATE_YMD.finditer(text, start, end):
        year, _, month, day = match.groups()
        readings.append((match, [_past_date(int(year), int(month), int(day))]))
    for match in _DATE_DMY.finditer(text, start, end):
        groups = match.groups()  # the plain form's four, or the spaced form's
        first, _, second, year = groups[:4] if groups[0] is not None else groups[4:]
        full_year = _full_year(year)
        readings.append(
            (
                match,
                [
                    _past_date(full_year, int(second), int(first)),
                    _past_date(full_year, int(first), int(second)),
                ],
            )
        )
    for match in _DATE_DAY_MONTH.finditer(text, start, end):
        day, month, year = match.groups()
        readings.append((match, [_past_date(int(year), _MONTHS[month.lower()], int(day))]))
    for match in _DATE_MONTH_DAY.finditer(text, start, end):
        month, day, year = match.groups()
        readings.append((match, [_past_date(int(year), _MONTHS[month.lower()], int(day))]))
    for match, dates in readings:
        past = frozenset(date for date in dates if date is not None)
        if past:
            yield match.start(), match.end(), past


def date_spans(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """Spans of plausible past dates in ``text[start:end]``, in the numeric and written
    formats people use."""
    for first, last, _ in written_dates(text, start, end):
        yield first, last


__all__ = ["date_spans", "written_dates"]
