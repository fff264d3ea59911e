"""The Slack channel in this process (tests/slack_harness.py) against the fake Slack Web API: channels in
mention mode (a channel message without a mention reaches nothing; a mention is answered in a thread under it,
as a conversation of its own without the owner's data), a DM thread answered in its thread, and a rate-limited
chat.postMessage waited out for its Retry-After and sent once; the contract's ask_yes_no answered by the next
yes or no in its conversation, once, and no answer in time is no; a Web API that cannot be reached at start
(an outage, not a refused token) does not stop the start."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from messaging_llm_bot.conversation.item_turns import ItemTurns
from tests.slack_harness import OWNER, owner_texts
from tests.waiting import wait_until

RETRY_AFTER = 0.3


def test_channels_are_in_mention_mode_and_a_mention_is_answered_in_its_thread(
    start_slack: Any, slack_api: Any, chat_server: Any
) -> None:
    start_slack()
    chat_server.enqueue('{"reply": "Lunch is at noon."}')
    slack_api.add_channel("C0GENERAL1")
    plain = slack_api.event(
        {
            "type": "message",
            "channel_type": "channel",
            "channel": "C0GENERAL1",
            "user": OWNER,
            "text": "anyone for lunch?",
            "ts": "1700000000.000100",
        }
    )
    assert slack_api.deliver(plain).status_code == 200
    mention = slack_api.mention(OWNER, "C0GENERAL1", "when is lunch?")
    assert slack_api.deliver(mention).status_code == 200
    wait_until(lambda: slack_api.posted("C0GENERAL1"), what="the answer in the channel")
    [answer] = slack_api.posted("C0GENERAL1")
    assert answer["text"] == "Lunch is at noon." and answer["thread_ts"] == mention["event"]["ts"]
    [request] = chat_server.chat_requests  # the plain channel message reached no model
    asked = json.dumps(request["messages"][-1])
    assert "when is lunch?" in asked and "anyone for lunch" not in asked and "<@" not in asked


def test_a_dm_thread_is_answered_in_its_thread(start_slack: Any, slack_api: Any, chat_server: Any) -> None:
    # No live message: under load a streamed answer's first post ("in the thread ▍") would be the one counted.
    start_slack(patch=lambda config: config["slack"].update(stream=False))
    chat_server.enqueue('{"reply": "first"}', '{"reply": "in the thread"}')
    root = slack_api.dm(OWNER, "start")
    assert slack_api.deliver(root).status_code == 200
    wait_until(lambda: owner_texts(slack_api) == ["first"], what="the first answer")
    threaded = slack_api.dm(OWNER, "and here?", thread_ts=root["event"]["ts"])
    assert slack_api.deliver(threaded).status_code == 200
    wait_until(lambda: len(owner_texts(slack_api)) == 2, what="the answer in the thread")
    second = slack_api.posted(slack_api.dms[OWNER])[1]
    assert second["text"] == "in the thread" and second["thread_ts"] == root["event"]["ts"]


def test_a_rate_limited_reply_waits_for_retry_after_and_goes_out_once(
    start_slack: Any, slack_api: Any, chat_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Retry-After 0.3 s (the product reads a fraction; Slack's own are whole seconds), and the delivery loop's
    # own first back-off 0.05 s instead of 0.5 s: a send that ignored Retry-After would go out before it.
    monkeypatch.setattr(ItemTurns, "RETRY_FIRST_SECONDS", 0.05)
    # No live message: under load a streamed answer's first post would take the 429 (best effort, not retried)
    # and the reply would go out at once, so the two posts counted below are the reply's, refused then sent.
    start_slack(patch=lambda config: config["slack"].update(stream=False))
    chat_server.enqueue('{"reply": "after the limit"}')
    slack_api.ratelimit("chat.postMessage", times=1, retry_after=RETRY_AFTER)
    assert slack_api.deliver(slack_api.dm(OWNER, "hello")).status_code == 200
    wait_until(lambda: owner_texts(slack_api), what="the answer after the limit")
    assert owner_texts(slack_api) == ["after the limit"]
    refused, sent = slack_api.call_times("chat.postMessage")  # refused once (429), then sent
    assert sent - refused >= RETRY_AFTER  # Retry-After was waited out


def test_a_web_api_that_cannot_be_reached_at_start_is_an_outage_and_the_channel_serves(start_slack: Any) -> None:
    with socket.socket() as closed:  # a loopback port nothing listens on: connection refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]

    def unreachable(config: dict) -> None:
        config["slack"]["base_url"] = f"http://127.0.0.1:{port}/api/"

    bot = start_slack(unreachable)  # returns once the request URL listens; raises when the start ended
    assert bot.exit_code is None and bot.service.bot_user == ""


def test_ask_yes_no_is_answered_by_the_next_yes_or_no_in_that_conversation_once(slack_api: Any) -> None:
    import asyncio

    from messaging_llm_bot.channels.contract import Address
    from messaging_llm_bot.channels.slack.api import SlackClient
    from messaging_llm_bot.channels.slack.channel import SlackChannel, question_key

    dm = slack_api.add_user(OWNER)

    async def main(reply: str, timeout: float) -> tuple[bool, bool, bool]:
        channel = SlackChannel(SlackClient(slack_api.base_url, slack_api.token))
        to = Address(dm)
        answered: list[bool] = []
        before = len(slack_api.posted(dm))
        ask = asyncio.ensure_future(channel.ask_yes_no(to, "Send the report now?", timeout))
        # The owner's reply as the intake hands it over (intake.py: resolve under the conversation's key).
        while len(slack_api.posted(dm)) == before and not ask.done():
            await asyncio.sleep(0.01)
        if reply:
            answered.append(channel.resolve(question_key(to), reply))
        got = await ask
        return got, answered == [True], channel.resolve(question_key(to), "yes")  # closed: no second answer

    assert asyncio.run(main("yes", 10)) == (True, True, False)
    assert asyncio.run(main("no", 10)) == (False, True, False)
    assert asyncio.run(main("", 0.2)) == (False, False, False)  # no answer in time is no
    assert [m["text"] for m in slack_api.posted(dm)] == ["Send the report now?"] * 3
