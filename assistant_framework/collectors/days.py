"""Which local days an event covers: every day its span overlaps, the end being exclusive."""

from __future__ import annotations

from datetime import date, datetime, timedelta, tzinfo


def parse_moment(value: object, tz: tzinfo) -> date | datetime | None:
    """A ``YYYY-MM-DD`` date or an ISO date-time in ``tz`` (floating times are local); None if unreadable."""
    text = str(value or "")
    if not text:
        return None
    try:
        if len(text) == 10:
            return date.fromisoformat(text)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (moment.replace(tzinfo=tz) if moment.tzinfo is None else moment).astimezone(tz)


def covered_days(start: date | datetime, end: date | datetime | None) -> list[date]:
    """Local days overlapped by [start, end): 21:00-00:00 is one day, an all-day event ends before its end date."""
    first = start.date() if isinstance(start, datetime) else start
    if end is None:
        return [first]
    if isinstance(end, datetime):
        # The end instant is exclusive: an end at midnight does not touch the next day.
        last = (end - timedelta(microseconds=1)).date() if end > _as_datetime(start, end) else first
    else:
        last = end - timedelta(days=1)
    last = max(first, last)
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def _as_datetime(value: date | datetime, like: datetime) -> datetime:
    if isinstance(value, datetime):
        return value
    return datetime.combine(value, datetime.min.time(), tzinfo=like.tzinfo)
