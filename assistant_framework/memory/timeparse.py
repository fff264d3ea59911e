"""Date phrases in queries ("yesterday", "last week", "in May", "on 3 June", "2023").

Pure: ``parse_date_range(text, now)`` returns the half-open range [since, until) in ``now``'s
timezone and the query with the phrase removed, or None when the text names no date.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        1,
    )
    for name in names
}
WEEKDAYS = {
    name: i for i, name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))
}
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_WEEKDAY = r"(?P<weekday>" + "|".join(WEEKDAYS) + r")"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_NUM_WORDS = {
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
}
_NUM = r"(?P<n>\d{1,3}|" + "|".join(_NUM_WORDS) + r")"
_YEAR = r"(?P<year>(?:19|20)\d{2})"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"


@dataclass
class DateRange:
    """A half-open time range [since, until) and the query text without the date phrase."""

    since: datetime
    until: datetime
    rest: str
    phrase: str


def _day_start(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_range(year: int, month: int, now: datetime) -> tuple[datetime, datetime]:
    start = now.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.replace(year=year + 1, month=1) if month == 12 else start.replace(month=month + 1)
    return start, end


def _past_year_for(month: int, day: int, now: datetime) -> int:
    """The year in which month/day most recently happened (this year unless still ahead)."""
    return now.year if (month, day) <= (now.month, now.day) else now.year - 1


def _add_months(moment: datetime, months: int) -> datetime:
    index = moment.year * 12 + moment.month - 1 + months
    return moment.replace(year=index // 12, month=index % 12 + 1, day=1)


def _relative(word: str, now: datetime) -> tuple[datetime, datetime] | None:
    word = word.lower()
    today = _day_start(now)
    if word == "today":
        return today, today + timedelta(days=1)
    if word == "yesterday":
        return today - timedelta(days=1), today
    if word == "day before yesterday":
        return today - timedelta(days=2), today - timedelta(days=1)
    return None


#: A date phrase's range: (since, until), or None when the words name no real day.
Span = tuple[datetime, datetime] | None


def _number(m: re.Match[str]) -> int:
    raw = m.group("n").lower()
    return _NUM_WORDS.get(raw) or int(raw)


class _DateRules:
    """The date phrases' ranges relative to ``now``: one method per kind of phrase, taking its match."""

    def __init__(self, now: datetime) -> None:
        self.now = now
        self.today = _day_start(now)
        self.week_start = self.today - timedelta(days=self.today.weekday())
        self.month_start = self.today.replace(day=1)
        self.year_start = self.today.replace(month=1, day=1)

    def ago(self, m: re.Match[str]) -> Span:
        n, unit = _number(m), m.group("unit").lower()
        if unit == "day":
            start = self.today - timedelta(days=n)
            return start, start + timedelta(days=1)
        if unit == "week":
            start = self.week_start - timedelta(weeks=n)
            return start, start + timedelta(weeks=1)
        if unit == "month":
            start = _add_months(self.month_start, -n)
            return start, _add_months(start, 1)
        return _month_range(self.now.year - n, 1, self.now)[0], _month_range(self.now.year - n + 1, 1, self.now)[0]

    def past_n(self, m: re.Match[str]) -> Span:
        n, unit = _number(m), m.group("unit").lower()
        if unit in ("day", "week"):
            start = self.today - timedelta(days=n if unit == "day" else 7 * n)
        elif unit == "month":
            start = _add_months(self.month_start, -n)
        else:
            start = self.year_start.replace(year=self.now.year - n)
        return start, self.today + timedelta(days=1)

    def last_unit(self, m: re.Match[str]) -> Span:
        which, unit = m.group("which").lower(), m.group("unit").lower()
        back = 1 if which in ("last", "previous") else 0
        if unit == "week":
            start = self.week_start - timedelta(weeks=back)
            return start, start + timedelta(weeks=1)
        if unit == "month":
            start = _add_months(self.month_start, -back)
            return start, _add_months(start, 1)
        if unit == "year":
            start = self.year_start.replace(year=self.now.year - back)
            return start, start.replace(year=start.year + 1)
        start = self.today - timedelta(days=back)
        return start, start + timedelta(days=1)

    def weekday(self, m: re.Match[str]) -> Span:
        target = WEEKDAYS[m.group("weekday").lower()]
        delta = (self.today.weekday() - target) % 7
        if m.group("last") and delta == 0:
            delta = 7
        start = self.today - timedelta(days=delta)
        return start, start + timedelta(days=1)

    def day_month(self, m: re.Match[str]) -> Span:
        month, day = MONTHS[m.group("month").lower()], int(m.group("day"))
        year = int(m.group("year")) if m.group("year") else _past_year_for(month, day, self.now)
        try:
            start = self.today.replace(year=year, month=month, day=day)
        except ValueError:
            return None
        return start, start + timedelta(days=1)

    def month_only(self, m: re.Match[str]) -> Span:
        month = MONTHS[m.group("month").lower()]
        year = int(m.group("year")) if m.group("year") else _past_year_for(month, 1, self.now)
        return _month_range(year, month, self.now)

    def iso_day(self, m: re.Match[str]) -> Span:
        try:
            start = self.today.replace(year=int(m.group("year")), month=int(m.group("mm")), day=int(m.group("dd")))
        except ValueError:
            return None
        return start, start + timedelta(days=1)

    def year_only(self, m: re.Match[str]) -> Span:
        year = int(m.group("year"))
        return self.today.replace(year=year, month=1, day=1), self.today.replace(year=year + 1, month=1, day=1)


def _rules(now: datetime) -> tuple[tuple[str, Callable[[re.Match[str]], Span]], ...]:
    """(pattern, function(match) -> (since, until)) in priority order."""
    rules = _DateRules(now)
    return (
        (r"\b" + _YEAR + r"-(?P<mm>\d{1,2})-(?P<dd>\d{1,2})\b", rules.iso_day),
        (
            r"\b(?:on\s+)?(?:the\s+)?" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r"(?:,?\s+" + _YEAR + r")?\b",
            rules.day_month,
        ),
        (r"\b(?:on\s+)?" + _MONTH + r"\s+" + _DAY + r"(?:,?\s+" + _YEAR + r")?\b(?!\d)", rules.day_month),
        (r"\b" + _NUM + r"\s+" + _UNIT + r"\s+ago\b", rules.ago),
        (r"\b(?:in\s+)?(?:the\s+)?(?:last|past)\s+" + _NUM + r"\s+" + _UNIT + r"\b", rules.past_n),
        (r"\b(?P<which>last|this|previous)\s+" + _UNIT + r"\b", rules.last_unit),
        (r"\b(?:on\s+)?(?P<last>last\s+)?" + _WEEKDAY + r"\b", rules.weekday),
        (r"\b(?:in\s+)?" + _MONTH + r"(?:\s+(?:of\s+)?" + _YEAR + r")?\b", rules.month_only),
        (r"\b(?:in\s+)?" + _YEAR + r"\b", rules.year_only),
    )


_RELATIVE = re.compile(r"\b(?:the\s+)?(day before yesterday|yesterday|today)\b", re.IGNORECASE)


def parse_date_range(text: str, now: datetime) -> DateRange | None:
    """The first date phrase in ``text`` as a range relative to ``now`` (aware or naive)."""
    found = _RELATIVE.search(text)
    if found:
        span = _relative(found.group(1), now)
        if span:
            return _result(text, found, span)
    for pattern, fn in _rules(now):
        for match in re.finditer(pattern, text, re.IGNORECASE):
            if "month" in match.re.groupindex and match.group("month") and match.group("month").lower() == "may":
                # "may" is also a verb: take it as a month only when capitalised or followed by a year/day.
                raw = match.group("month")
                if raw == "may" and not (match.groupdict().get("year") or match.groupdict().get("day")):
                    continue
            span = fn(match)
            if span:
                return _result(text, match, span)
    return None


def _result(text: str, match: re.Match[str], span: tuple[datetime, datetime]) -> DateRange:
    rest = (text[: match.start()] + " " + text[match.end() :]).strip()
    rest = re.sub(r"\s+", " ", rest)
    return DateRange(since=span[0], until=span[1], rest=rest, phrase=match.group(0).strip())
