"""Discord never loses a message: one the inbox cannot store is held in memory and stored once storage works (the
gateway would never send it again), its chat told once; what the gateway did not deliver (the bot stopped, a
stop while a message was held, a session Discord invalidated) is read from the channels' history after the last
message handled there, and answered once. The Discord channel in this process (tests/discord_harness.py)
against the fake Discord (its REST history: ``GET /channels/{id}/messages``) and the fake model; storage broken
as tests/test_inbox_held.py breaks it (tests/inbox_faults.py)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from assistant_framework.inbox import Inbox
from messaging_llm_bot.conversation import held
from tests.crash_bot import echo_reply
from tests.discord_harness import OWNER, owner_texts
from tests.inbox_faults import break_inbox, repair_inbox
from tests.telegram_harness import busy_queue
from tests.waiting import wait_until

FRIEND = "80351110224678914"
GUILD = "81384788765712384"
CANNOT_STORE = "the inbox cannot store messages"
NOTICE = "I cannot save messages right now"


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Storing tried again after 0.05 s, then every 0.1 s (the product's 1 s doubled up to 30 s)."""
    monkeypatch.setattr(held, "RETRY_FIRST_SECONDS", 0.05)
    monkeypatch.setattr(held, "RETRY_MAX_SECONDS", 0.1)


def asked(chat_server: Any) -> list[str]:
    """The user messages the model was asked to answer, in order."""
    return [r["messages"][-1]["content"].split("\n")[0] for r in chat_server.chat_requests]


def answers(discord: Any, channel: str | None = None) -> list[str]:
    """The bot's answers (``re: ...``) in the owner's DM or ``channel``, in order."""
    shown = owner_texts(discord) if channel is None else [m["content"] for m in discord.posted(channel)]
    return [text for text in shown if text.startswith("re:")]


def break_inbox_after_a_first_answer(discord: Any, workspace: Any) -> Path:
    """The owner's "first" answered and completed, then the inbox unable to store: the file to repair it."""
    discord.dm(OWNER, "first")
    wait_until(lambda: answers(discord) == ["re: first"], 15, "the first answer")
    wait_until(lambda: not Inbox(workspace).pending(), 15, "the first message completed")
    return break_inbox(workspace)


def with_friend(config: dict) -> None:
    busy_queue(config)  # each message its own turn: the answers per message are the point
    config["discord"]["allowed"] = [OWNER, FRIEND]
    config["discord"]["owner"] = OWNER


def test_a_message_the_inbox_cannot_store_is_held_and_answered_once_storage_works(
    start_discord: Any, discord_api: Any, chat_server: Any, workspace: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Without holding, the message was refused like a webhook's and lost: the gateway never sends it again."""
    chat_server.set_handler(echo_reply)
    bot = start_discord(patch=with_friend)
    pending = break_inbox_after_a_first_answer(discord_api, workspace)
    with caplog.at_level(logging.INFO):
        discord_api.dm(OWNER, "held one")
        discord_api.dm(OWNER, "held two")
        discord_api.dm(FRIEND, "held too")
        wait_until(lambda: any(NOTICE in t for t in owner_texts(discord_api)), 15, "the owner told")
        wait_until(lambda: bot.service.storage.tries >= 3, 15, "storing tried again, and again")
        assert asked(chat_server) == ["first"]  # nothing of what waits reached the model
        assert sum(NOTICE in t for t in owner_texts(discord_api)) == 1  # told once, not per try or message
        friend_dm = discord_api.add_user(FRIEND)
        assert discord_api.posted(friend_dm) == []  # behind the owner's: the gateway's order is kept
        repair_inbox(pending)
        wait_until(lambda: answers(discord_api, friend_dm) == ["re: held too"], 15, "the friend's answer")
        wait_until(lambda: len(answers(discord_api)) == 3, 15, "the owner's answers")
    assert answers(discord_api) == ["re: first", "re: held one", "re: held two"]
    assert sorted(asked(chat_server)) == ["first", "held one", "held too", "held two"]
    messages = [r.getMessage() for r in caplog.records]
    assert sum(CANNOT_STORE in m for m in messages) == 1, "the cause is logged once"
    assert any("stores messages again" in m for m in messages)
    wait_until(lambda: not Inbox(workspace).pending(), 15, "every message completed")


def test_a_message_held_when_the_channel_stops_is_read_from_the_history_at_the_next_start(
    start_discord: Any, discord_api: Any, chat_server: Any, workspace: Any, caplog: pytest.LogCaptureFixture
) -> None:
    chat_server.set_handler(echo_reply)
    start_discord(patch=busy_queue)
    pending = break_inbox_after_a_first_answer(discord_api, workspace)
    with caplog.at_level(logging.WARNING):
        discord_api.dm(OWNER, "held one")
        wait_until(lambda: any(NOTICE in t for t in owner_texts(discord_api)), 15, "the owner told")
        start_discord.running[-1].stop()
    assert any("held (the inbox could not store it) when the channel stopped" in r.getMessage() for r in caplog.records)
    repair_inbox(pending)
    start_discord(patch=busy_queue)
    wait_until(lambda: answers(discord_api) == ["re: first", "re: held one"], 20, "the held message answered")
    wait_until(lambda: not Inbox(workspace).pending(), 15, "the held message completed")
    assert asked(chat_server) == ["first", "held one"]


def test_what_was_written_while_the_bot_was_down_is_answered_once_at_the_start(
    start_discord: Any, discord_api: Any, chat_server: Any, workspace: Any
) -> None:
    """Messages, a mention in a guild channel: answered once, in order; a command and an answer handled before
    the stop are not done again, a guild message without the bot's mention stays passed over."""
    chat_server.set_handler(echo_reply)
    start_discord(patch=busy_queue)
    general = discord_api.add_channel(GUILD, "general")
    discord_api.dm(OWNER, "before")
    discord_api.say(OWNER, general, "in the guild", mention=True)
    wait_until(lambda: answers(discord_api, general) == ["re: in the guild"], 15, "the guild answer")
    wait_until(lambda: answers(discord_api) == ["re: before"], 15, "the DM answer")
    discord_api.dm(OWNER, "/help")  # a command: answered without the model, never stored
    wait_until(lambda: len(owner_texts(discord_api)) == 2, 15, "the command's answer")
    wait_until(lambda: not Inbox(workspace).pending(), 15, "everything completed")
    start_discord.running[-1].stop()
    discord_api.dm(OWNER, "while down one")
    discord_api.dm(OWNER, "while down two")
    discord_api.say(OWNER, general, "chatter without a mention")
    discord_api.say(OWNER, general, "mentioned while down", mention=True)
    start_discord(patch=busy_queue)
    wait_until(lambda: len(answers(discord_api)) == 3, 20, "the DM's missed messages answered")
    wait_until(lambda: len(answers(discord_api, general)) == 2, 20, "the guild's missed mention answered")
    wait_until(lambda: not Inbox(workspace).pending(), 15, "everything completed")
    assert answers(discord_api) == ["re: before", "re: while down one", "re: while down two"]
    assert answers(discord_api, general) == ["re: in the guild", "re: mentioned while down"]
    assert len(owner_texts(discord_api)) == 4  # the command was not answered again
    assert sorted(asked(chat_server)) == sorted(
        ["before", "in the guild", "while down one", "while down two", "mentioned while down"]
    )
    assert discord_api.calls("GET /channels/{channel_id}/messages")


def test_a_session_discord_invalidates_is_followed_by_reading_what_it_missed(
    start_discord: Any, discord_api: Any, chat_server: Any, workspace: Any
) -> None:
    chat_server.set_handler(echo_reply)
    start_discord(patch=busy_queue)
    discord_api.dm(OWNER, "first")
    wait_until(lambda: answers(discord_api) == ["re: first"], 15, "the first answer")
    discord_api.dm(OWNER, "missed by the gateway", deliver=False)  # written while no session was connected
    discord_api.invalidate_session()
    wait_until(lambda: len(discord_api.identified) == 2, 15, "a new session")
    wait_until(lambda: answers(discord_api) == ["re: first", "re: missed by the gateway"], 20, "the missed one")
    discord_api.dm(OWNER, "after")
    wait_until(lambda: len(answers(discord_api)) == 3, 15, "the next message over the new session")
    wait_until(lambda: not Inbox(workspace).pending(), 15, "everything completed")
    assert asked(chat_server) == ["first", "missed by the gateway", "after"]


def test_the_first_dm_of_an_allowed_user_written_while_the_bot_was_down_is_answered_at_the_start(
    start_discord: Any, discord_api: Any, chat_server: Any, workspace: Any
) -> None:
    """A DM the bot never took a message in has no cursor of its own: an allowed user's DM is read after the
    newest message the bot handled anywhere."""
    chat_server.set_handler(echo_reply)
    start_discord(patch=with_friend)
    discord_api.dm(OWNER, "before")
    wait_until(lambda: answers(discord_api) == ["re: before"], 15, "the owner's answer")
    wait_until(lambda: not Inbox(workspace).pending(), 15, "the owner's message completed")
    start_discord.running[-1].stop()
    discord_api.dm(FRIEND, "my first message")
    start_discord(patch=with_friend)
    friend_dm = discord_api.add_user(FRIEND)
    wait_until(lambda: answers(discord_api, friend_dm) == ["re: my first message"], 20, "the friend's answer")
    wait_until(lambda: not Inbox(workspace).pending(), 15, "the friend's message completed")
    assert asked(chat_server) == ["before", "my first message"]
    assert answers(discord_api) == ["re: before"]
