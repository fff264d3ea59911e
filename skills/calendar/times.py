"""The calendar skill's times: the model's local "YYYY-MM-DD HH:MM" to an aware moment in the owner's zone."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

LOCAL_FORMAT = "%Y-%m-%d %H:%M"


def local_moment(value: str, zone: ZoneInfo) -> datetime:
    """``value`` read as the owner's wall-clock time in ``zone``.

    A time the clocks skip (02:30 on the spring-forward night) does not exist: ValueError says so. A time
    the clocks pass twice (the autumn night) is its first occurrence (``fold=0``, still summer time)."""
    text = " ".join(str(value).replace("T", " ").split())
    try:
        naive = datetime.strptime(text, LOCAL_FORMAT)
    except ValueError:
        raise ValueError(f"start {value!r} is not a local time in the form YYYY-MM-DD HH:MM") from None
    moment = naive.replace(tzinfo=zone)
    # A wall-clock time in the gap comes back from UTC as another wall-clock time.
    if moment.astimezone(UTC).astimezone(zone).replace(tzinfo=None) != naive:
        raise ValueError(f"{text} does not exist in {zone.key}: the clocks go forward then; pick another time")
    return moment


def shown(moment: date | datetime, zone: ZoneInfo) -> str:
    """A moment as the owner reads it: weekday, local date and time (an all-day date as it is)."""
    if not isinstance(moment, datetime):
        return f"{moment:%a %Y-%m-%d} (all day)"
    local = moment.astimezone(zone) if moment.tzinfo else moment
    return f"{local:%a} {local:{LOCAL_FORMAT}}"
