"""A reminder set in a forum topic is delivered in that topic; one set outside topics (or stored before
reminders kept their conversation) in the chat itself; a topic closed or deleted since falls back to the
chat's General, logged. The real bot, the reminders skill and the fake Bot API."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta, timezone

from assistant_framework.stores.reminders import REMINDERS_FILE, ReminderStore
from tests.telegram_harness import OWNER

GROUP = -100888


def _remind(text: str) -> str:
    return json.dumps({"skill": "reminders", "args": {"action": "add", "text": text, "in_minutes": 600}})


def _due_now(workspace) -> None:
    """Move every pending reminder's time to a moment ago (as the owner may edit the file by hand)."""
    rows = json.loads(workspace.read_text(REMINDERS_FILE))
    for row in rows:
        row["due_at"] = (datetime.now(timezone.utc) - timedelta(seconds=5)).isoformat(timespec="seconds")
    workspace.write_text(REMINDERS_FILE, json.dumps(rows))


def _texts(fake, chat_id: int, topic: int | None) -> list[str]:
    return [m.get("text", "") for m in fake.topic_messages(chat_id, topic)]


def test_a_reminder_set_in_a_topic_is_delivered_there_and_one_set_outside_stays_outside(
    fake, start_bot, chat_server, workspace
):
    start_bot(progress=False)
    chat_server.enqueue(_remind("stretch"), '{"reply": "Set for later."}')
    fake.send_message("remind me to stretch", topic=10)
    fake.wait_for(lambda: _texts(fake, OWNER, 10))
    chat_server.enqueue(_remind("water the plants"), '{"reply": "Set as well."}')
    fake.send_message("remind me to water the plants")
    fake.wait_for(lambda: _texts(fake, OWNER, None))
    rows = {r["text"]: r for r in ReminderStore(workspace).list()}
    assert rows["stretch"]["conversation_id"] == "tg:1:10" and rows["water the plants"]["conversation_id"] == "tg:1"
    _due_now(workspace)
    fake.wait_for(lambda: all(r["status"] == "delivered" for r in ReminderStore(workspace).list()))
    assert "⏰ stretch" in _texts(fake, OWNER, 10)  # in the topic it was set in
    assert "⏰ water the plants" in _texts(fake, OWNER, None)  # outside topics, as before
    assert "⏰ stretch" not in _texts(fake, OWNER, None) and "⏰ water the plants" not in _texts(fake, OWNER, 10)


def test_a_reminder_whose_topic_was_closed_or_deleted_goes_to_general_and_an_old_row_too(
    fake, start_bot, workspace, caplog
):
    for topic in (5, 6, 7):  # the group's topics exist (a member wrote in each)
        fake.send_message(f"hello in {topic}", user_id=OWNER, chat_id=GROUP, chat_type="supergroup", topic=topic)
    fake.close_topic(GROUP, 5)
    fake.delete_topic(GROUP, 6)
    store, past = ReminderStore(workspace), datetime.now(timezone.utc) - timedelta(seconds=5)
    store.add(GROUP, "in a closed topic", past, "Europe/Berlin", conversation_id=f"tg:{GROUP}:5")
    store.add(GROUP, "in a deleted topic", past, "Europe/Berlin", conversation_id=f"tg:{GROUP}:6")
    store.add(GROUP, "in an open topic", past, "Europe/Berlin", conversation_id=f"tg:{GROUP}:7")
    store.add(GROUP, "an old row", past, "Europe/Berlin")  # stored before reminders kept their conversation
    with caplog.at_level(logging.WARNING, logger="messaging_llm_bot.channels.telegram.send"):
        start_bot()
        fake.wait_for(lambda: all(r["status"] == "delivered" for r in ReminderStore(workspace).list()))
    general = _texts(fake, GROUP, None)
    assert {"⏰ in a closed topic", "⏰ in a deleted topic", "⏰ an old row"} <= set(general)
    assert _texts(fake, GROUP, 7) == ["⏰ in an open topic"]
    warnings = [r.getMessage() for r in caplog.records if "General" in r.getMessage()]
    assert len(warnings) == 2, warnings  # each fallback says why
    assert any("topic 5" in w and "topic_closed" in w.lower() for w in warnings)
    assert any("topic 6" in w and "thread not found" in w.lower() for w in warnings)
