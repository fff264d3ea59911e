"""The Discord channel in this process (tests/discord_harness.py) against the fake Discord: a mention in a thread is
answered in that thread, its own conversation; an application without the message content intent is refused at
start in one sentence that says how to turn it on (the gateway's close 4014)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.discord_harness import OWNER, STRANGER, RunningDiscord, discord_config, question_of
from tests.waiting import wait_until

GUILD = "81384788765712384"


def test_a_mention_in_a_thread_is_answered_in_that_thread_as_its_own_conversation(
    start_discord: Any, discord_api: Any, chat_server: Any
) -> None:
    bot = start_discord()
    general = discord_api.add_channel(GUILD, "general")
    thread = discord_api.add_channel(GUILD, "lunch plans", parent_id=general)
    chat_server.enqueue('{"reply": "Noon, as always."}')
    discord_api.say(OWNER, thread, "when is lunch?", mention=True)
    wait_until(lambda: discord_api.posted(thread), what="the answer in the thread")
    assert [m["content"] for m in discord_api.posted(thread)] == ["Noon, as always."]
    assert discord_api.posted(general) == []
    [request] = chat_server.chat_requests
    assert "when is lunch?" in str(request["messages"][-1])
    wait_until(lambda: not bot.service.inbox.pending(), what="the message completed")


def test_without_the_message_content_intent_the_start_is_refused_in_one_sentence(
    bot_config: dict, workspace: Any, tmp_path: Any, discord_api: Any, capfd: Any
) -> None:
    from tests.telegram_harness import make_runtime

    discord_api.message_content = False  # the application's Bot page has the intent off
    bot = RunningDiscord(make_runtime(discord_config(bot_config, discord_api), workspace, tmp_path), discord_api)
    assert bot.service.run() == 1
    err = capfd.readouterr().err
    assert "Message Content Intent" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_only_the_owners_press_answers_a_question(
    start_discord: Any, discord_api: Any, chat_server: Any, workspace: Any
) -> None:
    workspace.write_text("notes/important.md", "# Important\n")
    delete = '{"skill": "file", "args": {"action": "delete", "path": "notes/important.md"}}'
    chat_server.enqueue(delete, '{"reply": "Handled."}')
    start_discord()
    discord_api.dm(OWNER, "delete notes/important.md")
    wait_until(lambda: any(m["components"] for m in discord_api.posted(discord_api.dms[OWNER])), what="the question")
    message, buttons = question_of(discord_api)
    discord_api.add_user(STRANGER)
    discord_api.click(message, buttons["Yes"], STRANGER)  # someone else's press
    wait_until(lambda: discord_api.callbacks, what="the answer to the press")
    [refused] = discord_api.callbacks
    assert refused["type"] == 4 and refused["data"]["flags"] == 64 and "Only the owner" in refused["data"]["content"]
    assert workspace.exists("notes/important.md") and len(chat_server.chat_requests) == 1  # still asking
    discord_api.click(message, buttons["No"], OWNER)
    wait_until(lambda: any("Handled." in m["content"] for m in discord_api.posted(discord_api.dms[OWNER])))
    assert workspace.exists("notes/important.md")  # the owner said no

    def question() -> dict:
        [shown] = [m for m in discord_api.posted(discord_api.dms[OWNER]) if m["id"] == message["id"]]
        return shown

    # The press's answer reaches the turn before the press's edit of the question (channels/discord/buttons.py):
    # under load the reply can come first, so the edit is waited for, not assumed.
    wait_until(lambda: question()["components"] == [], what="the question's buttons removed")
    assert question()["content"].endswith("No: not done.")


def test_a_question_too_long_for_one_message_comes_whole_in_parts_the_buttons_under_the_last(
    start_discord: Any, discord_api: Any, chat_server: Any, workspace: Any
) -> None:
    """Every argument is shown whole (a long text was cut at 240 characters): a question over Discord's 2,000
    characters comes in parts, only the last with the buttons, and the owner's press there answers it."""
    workspace.write_text("notes/important.md", "# Important\n")
    content = " ".join(f"word{i:04d}" for i in range(450))
    delete = json.dumps(
        {"skill": "file", "args": {"action": "delete", "path": "notes/important.md", "content": content}}
    )
    chat_server.enqueue(delete, '{"reply": "Handled."}')
    start_discord()
    discord_api.dm(OWNER, "delete notes/important.md")
    dm = discord_api.dms[OWNER]
    wait_until(lambda: any(m["components"] for m in discord_api.posted(dm)), what="the question")
    posted = discord_api.posted(dm)
    first = next(i for i, m in enumerate(posted) if m["content"].startswith("Confirm this action?"))
    parts = posted[first:]  # (a progress line may come before the question)
    assert len(parts) >= 3
    assert [bool(m["components"]) for m in parts] == [False] * (len(parts) - 1) + [True]
    shown = " ".join(m["content"] for m in parts).split()
    assert [w.strip('",}') for w in shown if w.strip('",}').startswith("word")] == content.split()
    message, buttons = question_of(discord_api)
    discord_api.click(message, buttons["No"], OWNER)
    wait_until(lambda: any("Handled." in m["content"] for m in discord_api.posted(dm)))
    assert workspace.exists("notes/important.md")


@pytest.mark.server  # the fake Discord's aiohttp server, asked over HTTP directly
def test_the_fake_makes_one_message_per_enforced_nonce_within_its_window(discord_api: Any) -> None:
    """Discord's Create Message as documented: with ``enforce_nonce`` a nonce the same author sent in the past
    few minutes gives back the message it made (as it shows now), no new one; past the window, or without
    ``enforce_nonce``, a new message; a nonce over 25 characters is refused."""
    import httpx

    dm = discord_api.add_user(OWNER)
    url = f"{discord_api.base_url}/channels/{dm}/messages"
    headers = {"Authorization": f"Bot {discord_api.token}"}
    now = [1000.0]
    discord_api.clock = lambda: now[0]

    def create(content: str, **body: Any) -> httpx.Response:
        return httpx.post(url, json={"content": content, **body}, headers=headers, timeout=10)

    first = create("one", nonce="n-1", enforce_nonce=True).json()
    assert first["nonce"] == "n-1"
    now[0] += discord_api.nonce_window - 1
    again = create("one, sent again", nonce="n-1", enforce_nonce=True).json()
    assert again["id"] == first["id"] and again["content"] == "one"  # the message made first
    assert create("two", nonce="n-1").json()["id"] != first["id"]  # not enforced: a new message
    now[0] += 2  # past the window
    later = create("three", nonce="n-1", enforce_nonce=True).json()
    assert later["id"] != first["id"] and later["content"] == "three"
    refused = create("four", nonce="x" * 26, enforce_nonce=True)
    assert refused.status_code == 400 and refused.json()["code"] == 50035
    assert [m["content"] for m in discord_api.posted(dm)] == ["one", "two", "three"]


def test_a_turns_file_sent_again_with_its_key_is_one_message(start_discord: Any, discord_api: Any) -> None:
    """What a kill between a file's send and its record does: the restart sends it with the same key (the
    item's and the file's), and Discord gives back the message it made; another key is another message."""
    import asyncio

    from messaging_llm_bot.channels.contract import Address, OutgoingFile

    bot = start_discord()
    dm = discord_api.add_user(OWNER)
    path = bot.runtime.workspace.path("exports")
    path.mkdir(parents=True, exist_ok=True)
    (path / "list.csv").write_text("milk,bread\n", encoding="utf-8")
    out = OutgoingFile("file", path / "list.csv", "the list")

    def send(key: str) -> str:
        sending = bot.service.channel.send_file(Address(dm), out, key=key)
        return asyncio.run_coroutine_threadsafe(sending, bot.service._loop).result(10).message_ids[0]

    first = send("discord_dm/0001:exports/list.csv")
    assert send("discord_dm/0001:exports/list.csv") == first
    other = send("discord_dm/0002:exports/list.csv")
    assert other != first
    assert [m["id"] for m in discord_api.posted(dm)] == [first, other]
    assert discord_api.attached(discord_api.posted(dm)[0]) == [("list.csv", b"milk,bread\n")]
