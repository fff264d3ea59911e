"""Pure reminder scheduling: aware instants, DST changes in Europe/Berlin, late delivery notes."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from messaging_llm_bot.conversation.reminders import delivery_text, due_time, plan

BERLIN = ZoneInfo("Europe/Berlin")
UTC = ZoneInfo("UTC")


def _rem(due_at: str, tz: str = "Europe/Berlin", text: str = "take pills") -> dict:
    return {"id": "r1", "chat_id": 1, "text": text, "due_at": due_at, "timezone": tz, "status": "pending"}


def test_spring_forward_day_has_23_hours_until_same_wall_time():
    # 07:00 Saturday (CET, +01:00) to 07:00 Sunday (CEST, +02:00): 23 real hours
    now = datetime(2025, 3, 29, 7, 0, tzinfo=BERLIN)
    p = plan(_rem("2025-03-30T07:00:00+02:00"), now)
    assert p.when - now == timedelta(hours=23)
    assert p.when.astimezone(UTC) == datetime(2025, 3, 30, 5, 0, tzinfo=UTC)
    assert not p.late


def test_fall_back_day_has_25_hours_until_same_wall_time():
    now = datetime(2025, 10, 25, 7, 0, tzinfo=BERLIN)
    p = plan(_rem("2025-10-26T07:00:00+01:00"), now)
    assert p.when - now == timedelta(hours=25)


def test_naive_due_at_is_wall_time_in_the_reminders_zone():
    assert due_time(_rem("2025-03-30T07:00")).astimezone(UTC) == datetime(2025, 3, 30, 5, 0, tzinfo=UTC)
    assert due_time(_rem("2025-03-29T07:00")).astimezone(UTC) == datetime(2025, 3, 29, 6, 0, tzinfo=UTC)
    assert due_time(_rem("2025-10-26T07:00")).astimezone(UTC) == datetime(2025, 10, 26, 6, 0, tzinfo=UTC)


def test_missed_reminder_is_planned_now_and_notes_local_due_time():
    now = datetime(2025, 3, 30, 6, 30, tzinfo=UTC)  # 08:30 CEST; was due 07:00 CEST
    rem = _rem("2025-03-30T07:00:00+02:00")
    p = plan(rem, now)
    assert p.when == now and p.late
    assert delivery_text(rem, now) == "⏰ take pills\n(late: was due 07:00)"


def test_missed_on_an_earlier_day_names_the_date():
    now = datetime(2025, 3, 31, 6, 0, tzinfo=UTC)
    assert "(late: was due 2025-03-30 07:00)" in delivery_text(_rem("2025-03-30T07:00:00+02:00"), now)


def test_on_time_delivery_has_no_note():
    now = datetime(2025, 3, 30, 5, 0, 20, tzinfo=UTC)
    assert delivery_text(_rem("2025-03-30T07:00:00+02:00"), now) == "⏰ take pills"


def test_unparseable_due_at_names_the_reminder():
    with pytest.raises(ValueError, match="r1"):
        due_time(_rem("next tuesday"))
