"""Relative dates resolved against the time something was said.

"I went to a support group yesterday", said on 8 May 2023, is about 7 May
2023; a question asks "when did she go to the support group?" and its
answer is a date no word of the message holds. `resolve_dates` finds
the relative expressions of a text and what each means on a given day, so
the text a message is indexed by (`index_text`)
can carry the date itself.

What is resolved (case-insensitive, whole words), against the day ``when``:

- ``today``, ``tonight``, ``this morning`` / ``afternoon`` / ``evening``:
  that day; ``yesterday``, ``last night``: the day before; ``tomorrow``:
  the day after;
- ``N days / weeks / months / years ago`` and ``in N …`` (``N`` in digits,
  ``a``, ``one`` to ``twelve``, ``a couple of``): that many before or after
  (a month or year ago keeps the day of the month where it exists);
- ``last`` / ``this`` / ``next`` ``week``, ``month``, ``year``,
  ``weekend``: the week (named by its Monday), the month, the year, the
  weekend (named by its Saturday) before, of, or after ``when``;
- ``last <weekday>``: the latest such day strictly before ``when`` (one to
  seven days back); ``next <weekday>`` and ``this coming <weekday>``: the
  first such day strictly after it.

A bare weekday ("on Friday") is left alone: it may be before or after.
Everything here is pure: the same text and day give the same answer.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta

__all__ = ["format_day", "resolve_dates"]

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "couple of": 2,
}
_COUNT = r"\d{1,3}|a couple of|couple of|an|a|" + "|".join(list(_NUMBERS)[2:14])
_UNIT = r"days?|weeks?|months?|years?"
_SOURCE = (
    r"\b(?:"
    r"(?P<day>today|tonight|yesterday|tomorrow|last night"
    r"|this (?:morning|afternoon|evening))"
    rf"|(?P<ago_n>{_COUNT}) (?P<ago_unit>{_UNIT}) ago"
    rf"|in (?P<in_n>{_COUNT}) (?P<in_unit>{_UNIT})"
    r"|(?P<rel>last|this|next) (?P<span>week|month|year|weekend)"
    rf"|(?P<wd_rel>last|next|this coming) (?P<weekday>{'|'.join(_WEEKDAYS)})"
    r")\b"
)
# Words may stand apart by any run of white space ("last\n week").
_PATTERN = re.compile(_SOURCE.replace(" ", r"\s+"), re.IGNORECASE)


def format_day(day: date) -> str:
    """``day`` as the index writes it: ``7 May 2023``."""
    return f"{day.day} {calendar.month_name[day.month]} {day.year}"


def _month(day: date) -> str:
    return f"{calendar.month_name[day.month]} {day.year}"


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(day.day, last))


def _shift(day: date, count: int, unit: str) -> str:
    unit = unit.rstrip("s").lower()
    if unit == "day":
        return format_day(day + timedelta(days=count))
    if unit == "week":
        return format_day(day + timedelta(weeks=count))
    months = count if unit == "month" else 12 * count
    return format_day(_add_months(day, months))


def _count(text: str) -> int:
    lowered = " ".join(text.lower().split())
    return int(lowered) if lowered.isdigit() else _NUMBERS[lowered]


def _span(day: date, rel: str, span: str) -> str:
    step = {"last": -1, "this": 0, "next": 1}[rel.lower()]
    span = span.lower()
    if span == "week":
        monday = day - timedelta(days=day.weekday()) + timedelta(weeks=step)
        return f"the week of {format_day(monday)}"
    if span == "weekend":
        saturday = day + timedelta(days=(5 - day.weekday()) % 7)
        if step < 0 or (step == 0 and day.weekday() == 6):
            saturday -= timedelta(weeks=1)
        elif step > 0:
            saturday += timedelta(weeks=1)
        return f"the weekend of {format_day(saturday)}"
    if span == "month":
        return _month(_add_months(day.replace(day=1), step))
    return str(day.year + step)


def _weekday(day: date, rel: str, name: str) -> str:
    target = _WEEKDAYS.index(name.lower())
    if rel.lower() == "last":
        back = (day.weekday() - target) % 7 or 7
        return format_day(day - timedelta(days=back))
    ahead = (target - day.weekday()) % 7 or 7
    return format_day(day + timedelta(days=ahead))


def _resolve(match: re.Match[str], day: date) -> str:
    if match["day"]:
        word = " ".join(match["day"].lower().split())
        if word in ("yesterday", "last night"):
            return format_day(day - timedelta(days=1))
        if word == "tomorrow":
            return format_day(day + timedelta(days=1))
        return format_day(day)
    if match["ago_n"]:
        return _shift(day, -_count(match["ago_n"]), match["ago_unit"])
    if match["in_n"]:
        return _shift(day, _count(match["in_n"]), match["in_unit"])
    if match["rel"]:
        return _span(day, match["rel"], match["span"])
    return _weekday(day, match["wd_rel"], match["weekday"])


def resolve_dates(text: str, when: date | datetime) -> tuple[tuple[str, str], ...]:
    """The relative date expressions of ``text``, in order and each once,
    with what they mean when said on ``when``'s day: ``(phrase as written,
    resolved)``.

    >>> resolve_dates("I went there yesterday, and again last Friday.", date(2023, 5, 8))
    (('yesterday', '7 May 2023'), ('last Friday', '5 May 2023'))
    >>> resolve_dates("Two weeks ago, or next month?", date(2023, 5, 8))
    (('Two weeks ago', '24 April 2023'), ('next month', 'June 2023'))
    """
    day = when.date() if isinstance(when, datetime) else when
    found: dict[str, str] = {}
    for match in _PATTERN.finditer(text):
        phrase = " ".join(match.group(0).split())
        if phrase.lower() in (p.lower() for p in found):
            continue
        try:
            found[phrase] = _resolve(match, day)
        except (OverflowError, ValueError):  # before year 1 or after 9999: left alone
            continue
    return tuple(found.items())
