"""Relative dates resolved against the day they were said."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrules._core.dates import format_day, resolve_dates

MONDAY = date(2023, 5, 8)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
days = st.dates(min_value=date(1900, 3, 1), max_value=date(2999, 10, 31))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went to a support group yesterday.", [("yesterday", "7 May 2023")]),
        ("We talked LAST NIGHT", [("LAST NIGHT", "7 May 2023")]),
        ("today and tomorrow", [("today", "8 May 2023"), ("tomorrow", "9 May 2023")]),
        ("this   morning", [("this morning", "8 May 2023")]),
        ("three days ago", [("three days ago", "5 May 2023")]),
        ("a couple of days ago", [("a couple of days ago", "6 May 2023")]),
        ("10 days ago", [("10 days ago", "28 April 2023")]),
        ("a week ago", [("a week ago", "1 May 2023")]),
        ("two months ago", [("two months ago", "8 March 2023")]),
        ("a year ago", [("a year ago", "8 May 2022")]),
        ("in two weeks", [("in two weeks", "22 May 2023")]),
        ("last week", [("last week", "the week of 1 May 2023")]),
        ("next week", [("next week", "the week of 15 May 2023")]),
        ("this month", [("this month", "May 2023")]),
        ("last month", [("last month", "April 2023")]),
        ("last year", [("last year", "2022")]),
        ("last weekend", [("last weekend", "the weekend of 6 May 2023")]),
        ("this weekend", [("this weekend", "the weekend of 13 May 2023")]),
        ("last Friday", [("last Friday", "5 May 2023")]),
        ("last Monday", [("last Monday", "1 May 2023")]),
        ("next Monday", [("next Monday", "15 May 2023")]),
        ("this coming Sunday", [("this coming Sunday", "14 May 2023")]),
        ("on Friday, the yesterdays of old", []),
        ("yesterday, and yesterday again", [("yesterday", "7 May 2023")]),
    ],
)
def test_phrases_resolve_against_the_day_said(text: str, expected: list[tuple[str, str]]) -> None:
    assert resolve_dates(text, MONDAY) == tuple(expected)


def test_a_datetime_counts_by_its_day() -> None:
    assert resolve_dates("yesterday", datetime(2023, 5, 8, 23, 59)) == (
        ("yesterday", "7 May 2023"),
    )


def test_a_month_ago_keeps_the_day_where_the_month_has_it() -> None:
    assert resolve_dates("a month ago", date(2023, 3, 31)) == (("a month ago", "28 February 2023"),)
    assert resolve_dates("a year ago", date(2024, 2, 29)) == (("a year ago", "28 February 2023"),)


@given(day=days, n=st.integers(min_value=0, max_value=999))
def test_n_days_ago_is_n_days_before(day: date, n: int) -> None:
    ((_, resolved),) = resolve_dates(f"It was {n} days ago.", day)
    assert resolved == format_day(day - timedelta(days=n))
    ((_, ahead),) = resolve_dates(f"in {n} days", day)
    assert ahead == format_day(day + timedelta(days=n))


@given(day=days, weekday=st.sampled_from(WEEKDAYS))
def test_last_and_next_weekday_are_that_day_within_a_week(day: date, weekday: str) -> None:
    wanted = WEEKDAYS.index(weekday)
    before = [day - timedelta(days=d) for d in range(1, 8)]
    after = [day + timedelta(days=d) for d in range(1, 8)]
    (last,) = [d for d in before if d.weekday() == wanted]
    (following,) = [d for d in after if d.weekday() == wanted]
    assert resolve_dates(f"last {weekday}", day) == ((f"last {weekday}", format_day(last)),)
    assert resolve_dates(f"next {weekday}", day) == ((f"next {weekday}", format_day(following)),)


@given(day=days)
def test_weeks_and_weekends_are_named_by_their_first_day_around_the_day(day: date) -> None:
    (_, this), (_, last), (_, following) = resolve_dates("this week, last week, next week", day)
    monday = day - timedelta(days=day.weekday())
    assert this == f"the week of {format_day(monday)}"
    assert last == f"the week of {format_day(monday - timedelta(weeks=1))}"
    assert following == f"the week of {format_day(monday + timedelta(weeks=1))}"
    ((_, weekend),) = resolve_dates("last weekend", day)
    saturday = next(
        day - timedelta(days=d) for d in range(1, 8) if (day - timedelta(days=d)).weekday() == 5
    )
    assert weekend == f"the weekend of {format_day(saturday)}"


@given(text=st.text(max_size=200), day=days)
def test_any_text_resolves_without_error_and_only_to_phrases_it_holds(text: str, day: date) -> None:
    found = resolve_dates(text, day)
    assert found == resolve_dates(text, day)
    folded = " ".join(text.lower().split())
    for phrase, resolved in found:
        assert phrase.lower() in folded
        assert resolved
    assert len({p.lower() for p, _ in found}) == len(found)


def test_a_date_out_of_the_calendar_is_left_alone() -> None:
    assert resolve_dates("in 999 years, and yesterday", date(9500, 1, 1)) == (
        ("yesterday", "31 December 9499"),
    )
    assert resolve_dates("999 days ago", date(1, 1, 2)) == ()
