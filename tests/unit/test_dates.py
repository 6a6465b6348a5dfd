"""Dates as people write them, read as the past dates they can be."""

from __future__ import annotations

import datetime

import pytest

from vsr_extproc.detectors.dates import written_dates

D = datetime.date


@pytest.mark.parametrize(
    ("text", "dates"),
    [
        ("1990-05-12", {D(1990, 5, 12)}),
        ("12.05.1990", {D(1990, 5, 12), D(1990, 12, 5)}),  # either way round
        ("13/05/1990", {D(1990, 5, 13)}),  # only one reading is a date
        ("12.05.90", {D(1990, 5, 12), D(1990, 12, 5)}),
        ("12 May 1990", {D(1990, 5, 12)}),
        ("May 12, 1990", {D(1990, 5, 12)}),
        ("22nd of September, 1985", {D(1985, 9, 22)}),
        ("3. März 1961", {D(1961, 3, 3)}),
        ("28. 4. 2013", {D(2013, 4, 28)}),  # Czech, Slovak, German: a space after a dot
        ("2013. 04. 28", {D(2013, 4, 28)}),  # Hungarian, Korean
    ],
)
def test_a_written_date_is_every_past_date_it_can_be(text: str, dates: set[D]) -> None:
    assert [(start, end, set(days)) for start, end, days in written_dates(text)] == [
        (0, len(text), dates)
    ]


@pytest.mark.parametrize(
    "text",
    # (spaced, a date needs its century: "steps 3. 10. 24" is no date)
    ["31.02.1990", "12.05.2090", "1890-01-01", "v1.2.3", "3.14", "steps 3. 10. 24"],
)
def test_what_is_no_past_date_is_left_out(text: str) -> None:
    assert list(written_dates(text)) == []
