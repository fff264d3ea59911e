"""Outside text inside the bot's own Markdown messages (collector notices, reminders, the digest,
/why) is shown as typed: a mail subject or an invite title cannot become a hidden link, bold
text or a code block. Rendered with the same converter the Telegram and Signal frontends use."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from assistant_framework.stores.reminders import ReminderStore
from assistant_framework.stores.tasks import TaskStore
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.commands import collector_notice, why_text
from messaging_llm_bot.conversation.digest import build_digest
from messaging_llm_bot.conversation.markup import escape_markdown, markdown_entities, unescape_markdown
from messaging_llm_bot.conversation.reminders import ReminderScheduler

TRICKY = [
    "[Verify your account](https://evil.example/login)",
    "**URGENT** __init__.py `rm -rf` ~~old~~ ||spoiler||",
    "# Heading\n> quoted\n- item\n1. first",
    "price $5, $$x$$, \\(a\\), \\[b\\], a\\b",
    "<b>html</b> & &amp; <https://evil.example>",
]
HIDDEN = {"text_link", "bold", "italic", "underline", "strikethrough", "spoiler", "code", "pre", "blockquote"}


def rendered(markdown: str) -> tuple[str, set[str]]:
    text, entities = markdown_entities(markdown)
    return text, {e["type"] for e in entities}


@pytest.mark.parametrize("text", TRICKY)
def test_escaped_text_renders_with_no_formatting_and_round_trips(text):
    shown, kinds = rendered(escape_markdown(text))
    assert not kinds & HIDDEN, (shown, kinds)
    assert "evil.example/login" not in text or "evil.example/login" in shown  # the address stays visible
    assert unescape_markdown(escape_markdown(text)) == text


def test_collector_notice_why_and_digest_keep_outside_text_inert(tmp_path):
    link = TRICKY[0]
    shown, kinds = rendered(collector_notice("mail", f"mail: 1 new matching item\n- {link} (bank@evil.example)"))
    assert "[Verify your account](https://evil.example/login)" in shown and "text_link" not in kinds

    shown, kinds = rendered(why_text([{"ref": "collectors/mail/x.md", "score": 1.0, "text": link}]))
    assert "https://evil.example/login" in shown and "text_link" not in kinds

    ws = Workspace(tmp_path / "ws")
    now = datetime(2026, 3, 3, 9, 0, tzinfo=timezone.utc)
    TaskStore(ws).add(link, due="2026-03-03")
    ReminderStore(ws).add(1, "**pay** the [fee](https://evil.example)", now + timedelta(hours=2), "UTC")
    shown, kinds = rendered(build_digest(ws, now, "UTC"))
    assert "text_link" not in kinds and "https://evil.example/login" in shown and "**pay** the [fee]" in shown
    assert "bold" in kinds  # the digest's own headings are still bold


def test_a_reminder_is_sent_as_typed(tmp_path):
    import asyncio

    store = ReminderStore(Workspace(tmp_path / "ws"))
    reminder = store.add(
        1, "[Click](https://evil.example) **now**", datetime.now(timezone.utc) - timedelta(seconds=1), "UTC"
    )
    sent: list[str] = []

    async def send(chat, text):
        sent.append(text)
        return True

    assert asyncio.run(ReminderScheduler(store, None, send).deliver(str(reminder["id"])))
    shown, kinds = rendered(sent[0])
    assert "[Click](https://evil.example) **now**" in shown and not kinds & HIDDEN
