"""The channel contract's test kit (issue 42, docs/channels.md): the cases every channel passes, through its real
service and its fake (FakeBotAPI, FakeSignalDaemon, a terminal, real IMAP and SMTP servers for email, the run's
Synapse for Matrix): a message in gets one reply out and one model call; a long reply arrives whole, in parts within
the declared limit; an ``ask`` approval waits for the owner's yes or no; a stranger is told once (by mail only a
proven one: an answer to a forged From is backscatter) and reaches no model (not on the terminal, which has no
strangers); an allowed guest is answered in their own chat and their turn sees nothing of the owner's (the owner's
context only in the owner's chat); a message the platform delivers again is answered once; a message the inbox
cannot store is not confirmed to the platform, and answered once after a restart; a streamed reply grows by edits
where the channel declares it can edit, else arrives as one message (the terminal prints it as it comes, once); a
photo reaches the vision runner and a file is saved as sent and named to the model (where ``media_in`` has them); a
restart mid-turn leaves the message to the next start, which answers it once. A file the send_file skill sends
arrives once, as it is in the workspace. A due reminder reaches the chat it was set in and a collector's notice only
the owner (conversation/notices.py); a job's run is answered once in the owner's chat. A message the same person
sends while the model works follows the busy mode (steer and interrupt: one turn answers both; queue: two turns in
order). A typed /help gets the shared answer and reaches no model; /stop ends the running turn at once and is
answered (where the channel takes commands).

Each case is a method of ``ChannelKit``, parametrized by ``channel``; a channel's drivers are in the tables below
(APPROVE, CHAT, ...), put there for a new channel by its own ``tests/kit_<name>.py`` (``register``, found by the
registry's name). The kit runs in ``tests/test_channel_kit_<group>.py``: each module subclasses ``ChannelKit``
with a group of channels, every channel in exactly one (tests/test_channel_contract.py checks), so that xdist's
workers share the kit (one module of all nine took one worker over a minute). The records' and the registration's
own checks are in tests/test_channel_contract.py.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import signal
import subprocess
import sys
import typing
from collections.abc import Callable
from pathlib import Path

import pytest

from messaging_llm_bot.channels.contract import Capabilities
from messaging_llm_bot.conversation.commands import NOTHING_TO_STOP_TEXT, STOPPING_TEXT, owner_only_text
from messaging_llm_bot.conversation.markup import terminal_text, utf16_len
from tests import preload
from tests.console_harness import TypedLines


def _telegram() -> tuple[Capabilities, Callable[[str], list[str]]]:
    from messaging_llm_bot.channels.telegram.format import CAPABILITIES, render_markdown

    return CAPABILITIES, lambda text: [part.text for part in render_markdown(text)]


def _signal() -> tuple[Capabilities, Callable[[str], list[str]]]:
    from messaging_llm_bot.channels.signal.format import CAPABILITIES, render_signal

    return CAPABILITIES, lambda text: [part.text for part in render_signal(text)]


def _console() -> tuple[Capabilities, Callable[[str], list[str]]]:
    from messaging_llm_bot.channels.console.service import CAPABILITIES

    return CAPABILITIES, lambda text: [terminal_text(text)]


def _email() -> tuple[Capabilities, Callable[[str], list[str]]]:
    from messaging_llm_bot.channels.email.format import CAPABILITIES, plain_text

    return CAPABILITIES, lambda text: [plain_text(text)]  # a mail is one part: the limit only bounds a runaway


def _matrix() -> tuple[Capabilities, Callable[[str], list[str]]]:
    from messaging_llm_bot.channels.matrix.format import CAPABILITIES, render_matrix

    return CAPABILITIES, lambda text: [part.body for part in render_matrix(text)]


def _webchat() -> tuple[Capabilities, Callable[[str], list[str]]]:
    from messaging_llm_bot.channels.webchat.format import CAPABILITIES, split

    return CAPABILITIES, split


def _whatsapp() -> tuple[Capabilities, Callable[[str], list[str]]]:
    from messaging_llm_bot.channels.whatsapp.format import CAPABILITIES, split

    # What the user reads: WhatsApp shows *bold* as bold, without its markers.
    return CAPABILITIES, lambda text: [part.replace("*", "") for part in split(text)]


def _slack() -> tuple[Capabilities, Callable[[str], list[str]]]:
    from messaging_llm_bot.channels.slack.format import CAPABILITIES, split

    # What the user reads: Slack shows *bold* as bold, without its markers.
    return CAPABILITIES, lambda text: [part.replace("*", "") for part in split(text)]


def _discord() -> tuple[Capabilities, Callable[[str], list[str]]]:
    from messaging_llm_bot.channels.discord.format import CAPABILITIES, split

    # What the user reads: Discord shows **bold** as bold, without its markers.
    return CAPABILITIES, lambda text: [part.replace("*", "") for part in split(text)]


CHANNELS = {
    "telegram": _telegram,
    "signal": _signal,
    "email": _email,
    "console": _console,
    "matrix": _matrix,
    "webchat": _webchat,
    "whatsapp": _whatsapp,
    "slack": _slack,
    "discord": _discord,
}
MEASURE: dict[str, Callable[[str], int]] = {
    "utf16": utf16_len,
    "utf8": lambda text: len(text.encode("utf-8")),
    "chars": len,
}


# -- an ``ask`` approval through each channel (the default policy asks before a delete) ---------------------

DELETE = '{"skill": "file", "args": {"action": "delete", "path": "notes/important.md"}}'


_Tty = TypedLines  # lines typed at a terminal (the terminal chat asks only a terminal)


def _approve_on_telegram(request: pytest.FixtureRequest, yes: bool) -> tuple[str, str]:
    from tests.telegram_harness import OWNER, approval_question, texts

    fake, workspace = request.getfixturevalue("fake"), request.getfixturevalue("workspace")
    request.getfixturevalue("start_bot")()
    fake.send_message("delete notes/important.md")
    message, buttons = approval_question(fake)
    assert workspace.exists("notes/important.md")  # nothing happens before the answer
    fake.callback_query(OWNER, next(b for b in buttons if b.endswith(":yes" if yes else ":no")), message["message_id"])
    reply = fake.wait_for(lambda: next((t for t in texts(fake) if "Handled." in t), None), timeout=30)
    return message["text"], reply


def _approve_on_signal(request: pytest.FixtureRequest, yes: bool) -> tuple[str, str]:
    from tests.signal_harness import OWNER

    daemon, workspace = request.getfixturevalue("daemon"), request.getfixturevalue("workspace")
    request.getfixturevalue("start")()
    daemon.message(OWNER, "delete notes/important.md")
    [question] = daemon.wait_sent(1)
    assert workspace.exists("notes/important.md")
    daemon.message(OWNER, "yes" if yes else "no")  # the answer, not a new message for the model
    reply = daemon.wait_sent(2)[1]
    return question["message"], reply["message"]


def _approve_on_the_terminal(request: pytest.FixtureRequest, yes: bool) -> tuple[str, str]:
    from messaging_llm_bot.channels.console.chat import run_console
    from tests.telegram_harness import make_runtime

    workspace = request.getfixturevalue("workspace")
    config = {**request.getfixturevalue("bot_config"), "memory": {"enabled": False}}  # as the other two run
    runtime = make_runtime(config, workspace, request.getfixturevalue("tmp_path"))
    out = io.StringIO()
    try:
        typed = _Tty(["delete notes/important.md\n", "y\n" if yes else "n\n"])
        assert run_console(runtime, typed, out, io.StringIO()) == 0
    finally:
        runtime.shutdown(5)
    text = out.getvalue()
    return text[text.index("Confirm this action?") :], text


def _approve_on_email(request: pytest.FixtureRequest, yes: bool) -> tuple[str, str]:
    from tests.email_harness import body, mail, wait_mails

    imap, smtp, workspace = (request.getfixturevalue(name) for name in ("email_imap", "email_smtp", "workspace"))
    request.getfixturevalue("start_email")()
    imap.append("INBOX", mail("delete notes/important.md", message_id="<ask-1@example.org>"))
    [question] = wait_mails(smtp, 1)
    assert workspace.exists("notes/important.md")
    answer = "yes" if yes else "no"  # the answer in the thread, not a new mail for the model
    imap.append("INBOX", mail(answer, message_id="<ask-2@example.org>", headers=_in_thread(question)))
    reply = wait_mails(smtp, 2)[1]
    return body(question), body(reply)


def _in_thread(sent: typing.Any) -> dict[str, str]:
    """The headers of a reply to the bot's mail ``sent``."""
    return {"In-Reply-To": sent["Message-ID"], "References": f"{sent['References']} {sent['Message-ID']}"}


def _matrix_world(request: pytest.FixtureRequest) -> typing.Any:
    """This test's people on the session's Synapse (tests/matrix_harness.py), which the first such test starts."""
    from tests.matrix_harness import Synapse

    world = request.getfixturevalue("matrix")
    assert isinstance(world.server, Synapse)  # named here: a test using it may start a process (tests/tiers.py)
    return world


def _matrix_room(request: pytest.FixtureRequest, **start: typing.Any) -> typing.Any:
    """The owner's direct room with the bot running and joined; (world, room)."""
    from tests.waiting import wait_until

    world = _matrix_world(request)
    room = world.direct_room()
    request.getfixturevalue("start_matrix")(**start)
    wait_until(lambda: world.joined(room), timeout=20, what="the bot to join the owner's direct room")
    return world, room


def _bot_texts_until(world: typing.Any, room: str, done: Callable[[list[str]], bool]) -> list[str]:
    from tests.waiting import wait_until

    wait_until(lambda: done(world.owner.texts(room, world.bot.user_id)), timeout=30, what="the bot's reply")
    return list(world.owner.texts(room, world.bot.user_id))


def _approve_on_matrix(request: pytest.FixtureRequest, yes: bool) -> tuple[str, str]:
    world, room = _matrix_room(request)
    workspace = request.getfixturevalue("workspace")
    world.owner.send(room, "delete notes/important.md")
    [question] = _bot_texts_until(world, room, lambda texts: any(t.startswith("Confirm") for t in texts))
    assert workspace.exists("notes/important.md")
    world.owner.send(room, "yes" if yes else "no")  # the answer, not a new message for the model
    texts = _bot_texts_until(world, room, lambda texts: any("Handled." in t for t in texts))
    return question, texts[-1]


def _approve_on_webchat(request: pytest.FixtureRequest, yes: bool) -> tuple[str, str]:
    from tests.waiting import wait_until

    workspace = request.getfixturevalue("workspace")
    chat = request.getfixturevalue("start_webchat")()
    chat.send("delete notes/important.md")
    wait_until(lambda: chat.history()["asking"], 30, "the question with its buttons")
    [question] = chat.history()["asking"]
    assert workspace.exists("notes/important.md")
    chat.answer(question["id"], yes)  # the button: no message, no turn
    replies = chat.replies_until(lambda texts: any("Handled." in t for t in texts))
    return question["text"], replies[-1]


def _whatsapp_texts_until(request: pytest.FixtureRequest, done: Callable[[list[str]], bool]) -> list[str]:
    """The bot's text messages to the owner once ``done`` says so (tests/whatsapp_harness.py)."""
    from tests.waiting import wait_until
    from tests.whatsapp_harness import OWNER

    graph = request.getfixturevalue("whatsapp_graph")
    wait_until(lambda: done(graph.texts(OWNER)), timeout=30, what="the bot's reply on WhatsApp")
    return graph.texts(OWNER)


def _approve_on_whatsapp(request: pytest.FixtureRequest, yes: bool) -> tuple[str, str]:
    from tests.whatsapp_harness import OWNER

    graph, workspace = request.getfixturevalue("whatsapp_graph"), request.getfixturevalue("workspace")
    request.getfixturevalue("start_whatsapp")()
    graph.user_text(OWNER, "delete notes/important.md")
    [question] = _whatsapp_texts_until(request, lambda texts: any(t.startswith("Confirm") for t in texts))
    assert workspace.exists("notes/important.md")
    graph.user_text(OWNER, "yes" if yes else "no")  # the answer, not a new message for the model
    texts = _whatsapp_texts_until(request, lambda texts: any("Handled." in t for t in texts))
    return question, texts[-1]


def _slack_texts_until(request: pytest.FixtureRequest, done: Callable[[list[str]], bool]) -> list[str]:
    """The bot's messages in the owner's DM once ``done`` says so (tests/slack_harness.py)."""
    from tests.slack_harness import owner_texts
    from tests.waiting import wait_until

    slack = request.getfixturevalue("slack_api")
    wait_until(lambda: done(owner_texts(slack)), timeout=30, what="the bot's reply on Slack")
    return owner_texts(slack)


def _approve_on_slack(request: pytest.FixtureRequest, yes: bool) -> tuple[str, str]:
    """The owner presses the question's Confirm or Decline button (a signed interactive payload)."""
    from tests.slack_harness import OWNER, owner_writes

    slack, workspace = request.getfixturevalue("slack_api"), request.getfixturevalue("workspace")
    request.getfixturevalue("start_slack")()
    owner_writes(slack, "delete notes/important.md")
    texts = _slack_texts_until(request, lambda texts: any(t.startswith("Confirm") for t in texts))
    question = next(t for t in texts if t.startswith("Confirm"))  # after a status line, when the model is slow
    assert workspace.exists("notes/important.md")
    dm = slack.dms[OWNER]
    [asked] = [m for m in slack.posted(dm) if m.get("blocks")]
    assert slack.deliver_form(slack.press(OWNER, dm, asked["ts"], "approve_yes" if yes else "approve_no")).ok
    texts = _slack_texts_until(request, lambda texts: any("Handled." in t for t in texts))
    # The answer may be the status line posted before the question (a slow model), so it is found by its text.
    [reply] = [text for text in texts if "Handled." in text]
    return question, reply


def _discord_texts_until(request: pytest.FixtureRequest, done: Callable[[list[str]], bool]) -> list[str]:
    """The bot's messages in the owner's DM once ``done`` says so (tests/discord_harness.py)."""
    from tests.discord_harness import owner_texts
    from tests.waiting import wait_until

    discord = request.getfixturevalue("discord_api")
    wait_until(lambda: done(owner_texts(discord)), timeout=30, what="the bot's reply on Discord")
    return owner_texts(discord)


def _approve_on_discord(request: pytest.FixtureRequest, yes: bool) -> tuple[str, str]:
    """The owner presses the question's Yes or No button (discord.ui; Discord's interaction callback)."""
    from tests.discord_harness import OWNER, owner_writes, question_of

    discord, workspace = request.getfixturevalue("discord_api"), request.getfixturevalue("workspace")
    request.getfixturevalue("start_discord")()
    owner_writes(discord, "delete notes/important.md")
    _discord_texts_until(request, lambda texts: any(t.startswith("Confirm") for t in texts))
    message, buttons = question_of(discord)
    question = message["content"]
    assert workspace.exists("notes/important.md") and list(buttons) == ["Yes", "No"]
    discord.click(message, buttons["Yes" if yes else "No"], OWNER)  # the answer, not a new message for the model
    texts = _discord_texts_until(request, lambda texts: any("Handled." in t for t in texts))
    assert [c["type"] for c in discord.callbacks] == [7]  # the question edited, its buttons taken off
    # The answer may be a live message sent before the question (streaming), so it is found by its text.
    [reply] = [text for text in texts if "Handled." in text]
    return question, reply


APPROVE = {
    "discord": _approve_on_discord,
    "slack": _approve_on_slack,
    "whatsapp": _approve_on_whatsapp,
    "webchat": _approve_on_webchat,
    "telegram": _approve_on_telegram,
    "signal": _approve_on_signal,
    "email": _approve_on_email,
    "console": _approve_on_the_terminal,
    "matrix": _approve_on_matrix,
}


class _AskCase:
    """An ``ask`` call through the channel."""

    @pytest.mark.parametrize("yes", [True, False], ids=["yes", "no"])
    def test_an_ask_call_waits_for_the_owners_yes_or_no(
        self, channel: str, yes: bool, request: pytest.FixtureRequest, chat_server, workspace
    ) -> None:
        workspace.write_text("notes/important.md", "# Important\n")
        chat_server.enqueue(DELETE, '{"reply": "Handled."}')
        question, reply = APPROVE[channel](request, yes)
        assert question.startswith("Confirm this action?") and "skill: file" in question and "important.md" in question
        assert "Handled." in reply
        assert workspace.exists("notes/important.md") is not yes
        asked = [str(r["messages"][-1])[:300] for r in chat_server.chat_requests]  # what each request ended with
        assert len(asked) == 2, asked  # the call, then the answer after it: the owner's word is no turn


# -- a message in, its reply out; a long reply split; a stranger told once ---------------------------------


def _words(text: str) -> str:
    return "".join(text.split())


def _chat_on_telegram(request: pytest.FixtureRequest, lines: list[str]) -> list[str]:
    """The owner sends ``lines``; the bot's messages in the owner's chat once the last reply is in."""
    from tests.telegram_harness import texts

    fake = request.getfixturevalue("fake")
    request.getfixturevalue("start_bot")()
    chat_server = request.getfixturevalue("chat_server")
    for line in lines:
        fake.send_message(line)
    fake.wait_for(lambda: len(chat_server.chat_requests) >= len(lines) and texts(fake), timeout=30)
    fake.wait_for(lambda: "END" in "".join(texts(fake)), timeout=30)
    return texts(fake)


def _chat_on_signal(request: pytest.FixtureRequest, lines: list[str]) -> list[str]:
    from tests.signal_harness import OWNER, wait_for

    daemon = request.getfixturevalue("daemon")
    request.getfixturevalue("start")()
    for line in lines:
        daemon.message(OWNER, line)
    wait_for(lambda: "END" in "".join(s["message"] for s in daemon.sent_to(OWNER)), what="the reply", timeout=30)
    return [s["message"] for s in daemon.sent_to(OWNER)]


def _chat_on_the_terminal(request: pytest.FixtureRequest, lines: list[str]) -> list[str]:
    from messaging_llm_bot.channels.console.chat import run_console
    from tests.telegram_harness import make_runtime

    config = {**request.getfixturevalue("bot_config"), "memory": {"enabled": False}}
    runtime = make_runtime(config, request.getfixturevalue("workspace"), request.getfixturevalue("tmp_path"))
    out = io.StringIO()
    try:
        assert run_console(runtime, _Tty([f"{line}\n" for line in lines]), out, io.StringIO()) == 0
    finally:
        runtime.shutdown(5)
    return [out.getvalue()]  # one screen: what the owner sees


def _chat_on_email(request: pytest.FixtureRequest, lines: list[str]) -> list[str]:
    from tests.email_harness import body, mail
    from tests.waiting import wait_until

    imap, smtp = request.getfixturevalue("email_imap"), request.getfixturevalue("email_smtp")
    # A mail shows no stream: the answer is read whole (a long one streamed from the fake took over the runner's
    # 10 s on a loaded machine; the streamed case has its own test).
    request.getfixturevalue("start_email")(patch=lambda config: config["llm"].update(stream=False))
    for n, line in enumerate(lines):
        imap.append("INBOX", mail(line, message_id=f"<chat-{n}@example.org>"))
    wait_until(lambda: "END" in "".join(body(m) for m in smtp.messages), 30, "the reply")
    return [body(m).strip() for m in smtp.messages]


def _chat_on_matrix(request: pytest.FixtureRequest, lines: list[str]) -> list[str]:
    world, room = _matrix_room(request)
    for line in lines:
        world.owner.send(room, line)
    return _bot_texts_until(world, room, lambda texts: "END" in "".join(texts))


def _chat_on_webchat(request: pytest.FixtureRequest, lines: list[str]) -> list[str]:
    chat = request.getfixturevalue("start_webchat")()
    for line in lines:
        chat.send(line)
    return chat.replies_until(lambda texts: "END" in "".join(texts))


def _chat_on_whatsapp(request: pytest.FixtureRequest, lines: list[str]) -> list[str]:
    from tests.whatsapp_harness import OWNER

    graph = request.getfixturevalue("whatsapp_graph")
    request.getfixturevalue("start_whatsapp")()
    for line in lines:
        graph.user_text(OWNER, line)
    return _whatsapp_texts_until(request, lambda texts: "END" in "".join(texts))


def _chat_on_slack(request: pytest.FixtureRequest, lines: list[str]) -> list[str]:
    from tests.slack_harness import owner_writes

    slack = request.getfixturevalue("slack_api")
    request.getfixturevalue("start_slack")()
    for line in lines:
        owner_writes(slack, line)
    return _slack_texts_until(request, lambda texts: "END" in "".join(texts))


def _chat_on_discord(request: pytest.FixtureRequest, lines: list[str]) -> list[str]:
    from tests.discord_harness import owner_writes

    discord = request.getfixturevalue("discord_api")
    request.getfixturevalue("start_discord")()
    for line in lines:
        owner_writes(discord, line)
    return _discord_texts_until(request, lambda texts: "END" in "".join(texts))


CHAT = {
    "discord": _chat_on_discord,
    "slack": _chat_on_slack,
    "whatsapp": _chat_on_whatsapp,
    "webchat": _chat_on_webchat,
    "telegram": _chat_on_telegram,
    "signal": _chat_on_signal,
    "email": _chat_on_email,
    "console": _chat_on_the_terminal,
    "matrix": _chat_on_matrix,
}


class _ReplyCase:
    """A message in, its reply out."""

    def test_a_message_in_gets_one_reply_out(self, channel: str, request: pytest.FixtureRequest, chat_server) -> None:
        chat_server.enqueue('{"reply": "Paris is the capital. END"}')
        shown = CHAT[channel](request, ["What is the capital of France?"])
        assert sum(text.count("Paris is the capital.") for text in shown) == 1
        assert len(chat_server.chat_requests) == 1
        assert "What is the capital of France?" in str(chat_server.chat_requests[0]["messages"][-1])


class _LongReplyCase:
    """A long reply, split."""

    def test_a_long_reply_arrives_whole_in_parts_within_the_channels_limit(
        self, channel: str, request: pytest.FixtureRequest, chat_server
    ) -> None:
        capabilities, _split = CHANNELS[channel]()
        measure = MEASURE[capabilities.length_unit]
        line = "Paris 🗼 ist die Hauptstadt, 東京 is far away."
        count = min(5 * 2_000 // len(line), 2 * capabilities.max_message_length // measure(line) + 1)
        reply = " ".join(f"{n}. {line}" for n in range(count)) + " END"
        answer = json.dumps({"reply": reply})
        # In 50 pieces, not one a word (1,700 events): this case is about the split, and a loaded machine took
        # over the model's 10 s to stream it word by word (four channels failed so in a whole run at load 20).
        pieces = [answer[n : n + len(answer) // 50 + 1] for n in range(0, len(answer), len(answer) // 50 + 1)]
        chat_server.enqueue({"content": answer, "stream_chunks": pieces})
        shown = CHAT[channel](request, ["Tell me a lot."])
        if channel != "console" and measure(reply) > capabilities.max_message_length:
            parts = [text for text in shown if "Paris" in text or "END" in text]
            assert len(parts) > 1 and all(measure(part) <= capabilities.max_message_length for part in parts)
        assert _words(reply) in _words("".join(shown))


def _strangers_on_telegram(request: pytest.FixtureRequest, patch: typing.Any = None) -> int:
    from tests.telegram_harness import OWNER, STRANGER

    fake = request.getfixturevalue("fake")
    request.getfixturevalue("start_bot")(config_patch=patch)
    request.getfixturevalue("chat_server").enqueue('{"reply": "pong"}')
    for n in range(3):
        fake.send_message(f"let me in {n}", user_id=STRANGER, username="stranger")
    # The answer (a pairing code, conversation/pairing.py) is written off the event loop: wait for it.
    fake.wait_for(lambda: fake.messages(STRANGER), timeout=30)
    fake.send_message("ping", user_id=OWNER)  # after the strangers' messages: all of theirs are handled
    fake.wait_for_messages(OWNER, 1, timeout=30)
    return len(fake.messages(STRANGER))


def _strangers_on_signal(request: pytest.FixtureRequest, patch: typing.Any = None) -> int:
    from tests.signal_harness import OWNER, STRANGER, wait_for

    daemon = request.getfixturevalue("daemon")
    request.getfixturevalue("start")(patch=patch)
    request.getfixturevalue("chat_server").enqueue('{"reply": "pong"}')
    for n in range(3):
        daemon.message(STRANGER, f"let me in {n}")
    daemon.message(OWNER, "ping")
    wait_for(lambda: daemon.sent_to(OWNER), what="the owner's reply", timeout=30)
    return len(daemon.sent_to(STRANGER))


def _strangers_on_email(request: pytest.FixtureRequest) -> int:
    from tests.email_harness import OWNER, STRANGER, mail, wait_mails

    imap, smtp = request.getfixturevalue("email_imap"), request.getfixturevalue("email_smtp")
    request.getfixturevalue("start_email")()
    request.getfixturevalue("chat_server").enqueue('{"reply": "pong"}')
    stranger_passed = "mx.example.org; dkim=pass header.d=evil.example"  # proven, and still a stranger
    files = [("invoice.pdf", "application/pdf", b"%PDF-1.4 open me")]
    for n in range(3):
        raw = mail(
            f"let me in {n}", sender=STRANGER, message_id=f"<in-{n}@evil>", auth=stranger_passed, attachments=files
        )
        imap.append("INBOX", raw)
    imap.append("INBOX", mail("ping", message_id="<ping@example.org>"))
    wait_mails(smtp, 2)
    assert smtp.recipients == [[STRANGER], [OWNER]]  # their pairing code (proven: no forged From), the pong
    assert request.getfixturevalue("workspace").list("**/invoice*") == []  # nothing of theirs is saved
    return 1


def _strangers_on_matrix(request: pytest.FixtureRequest) -> int:
    from tests.waiting import wait_until

    world = _matrix_world(request)
    group = world.owner.create_room([world.bot.user_id, world.stranger.user_id], name="club")
    world.stranger.join(group)
    request.getfixturevalue("start_matrix")()
    wait_until(lambda: world.joined(group), timeout=20, what="the bot to join the owner's group")
    request.getfixturevalue("chat_server").enqueue('{"reply": "pong"}')
    mention = {"m.mentions": {"user_ids": [world.bot.user_id]}}
    for n in range(3):
        world.stranger.send(group, f"{world.bot.user_id} let me in {n}", **mention)
    world.owner.send(group, f"{world.bot.user_id} ping", **mention)  # after the stranger's, in the same room
    bot = world.bot.user_id
    wait_until(lambda: "pong" in world.owner.texts(group, bot), timeout=30, what="the owner's reply")
    return len([t for t in world.owner.texts(group, bot) if world.stranger.user_id in t])


def _strangers_on_whatsapp(request: pytest.FixtureRequest, patch: typing.Any = None) -> int:
    from tests.waiting import wait_until
    from tests.whatsapp_harness import OWNER, STRANGER

    graph = request.getfixturevalue("whatsapp_graph")
    request.getfixturevalue("start_whatsapp")(patch=patch)
    request.getfixturevalue("chat_server").enqueue('{"reply": "pong"}')
    for n in range(3):
        graph.user_text(STRANGER, f"let me in {n}")
    wait_until(lambda: graph.texts(STRANGER), timeout=30, what="the stranger's answer")
    graph.user_text(OWNER, "ping")
    _whatsapp_texts_until(request, lambda texts: "pong" in texts)
    told = f"+{STRANGER}" if patch else "approve code"  # pairing off: their number; on: a code (pairing.py)
    return len([t for t in graph.texts(STRANGER) if told in t])


def _strangers_on_slack(request: pytest.FixtureRequest, patch: typing.Any = None) -> int:
    from tests.slack_harness import STRANGER, owner_writes
    from tests.waiting import wait_until

    slack = request.getfixturevalue("slack_api")
    request.getfixturevalue("start_slack")(patch=patch)
    request.getfixturevalue("chat_server").enqueue('{"reply": "pong"}')
    for n in range(3):
        assert slack.deliver(slack.dm(STRANGER, f"let me in {n}")).status_code == 200
    wait_until(lambda: slack.posted(slack.dms[STRANGER]), timeout=30, what="the stranger's answer")
    owner_writes(slack, "ping")
    _slack_texts_until(request, lambda texts: "pong" in texts)
    told = STRANGER if patch else "approve code"  # pairing off: their user id; on: a code (pairing.py)
    return len([m for m in slack.posted(slack.dms[STRANGER]) if told in m["text"]])


def _strangers_on_discord(request: pytest.FixtureRequest, patch: typing.Any = None) -> int:
    from tests.discord_harness import STRANGER, owner_writes
    from tests.waiting import wait_until

    discord = request.getfixturevalue("discord_api")
    request.getfixturevalue("start_discord")(patch=patch)
    request.getfixturevalue("chat_server").enqueue('{"reply": "pong"}')
    for n in range(3):
        discord.dm(STRANGER, f"let me in {n}")
    wait_until(lambda: discord.posted(discord.dms[STRANGER]), timeout=30, what="the stranger's answer")
    owner_writes(discord, "ping")
    _discord_texts_until(request, lambda texts: "pong" in texts)
    told = STRANGER if patch else "approve code"  # pairing off: their user id; on: a code (pairing.py)
    return len([m for m in discord.posted(discord.dms[STRANGER]) if told in m["content"]])


STRANGERS = {
    "discord": _strangers_on_discord,
    "slack": _strangers_on_slack,
    "whatsapp": _strangers_on_whatsapp,
    "telegram": _strangers_on_telegram,
    "signal": _strangers_on_signal,
    "email": _strangers_on_email,
    "matrix": _strangers_on_matrix,
}
#: Why a channel has no strangers to tell.
NO_STRANGERS = {
    "console": "the terminal chat has one user, its owner: no strangers",
    "webchat": "the Chat page has one user, the owner signed in to the page: a request without the sign-in is "
    "refused 401 before anything is stored (tests/test_web_chat_browser.py::test_without_sign_in_the_chat_is_refused)",
}
#: How often a stranger is told: once (by mail only a stranger their provider proves: an answer to a forged
#: sender is backscatter, tests/test_pairing.py).
TOLD: dict[str, int] = {}


class _StrangerCase:
    """A stranger, told once."""

    def test_a_stranger_is_told_once_and_reaches_no_model(
        self, channel: str, request: pytest.FixtureRequest, chat_server
    ) -> None:
        if channel not in STRANGERS:
            pytest.skip(NO_STRANGERS[channel])
        assert STRANGERS[channel](request) == TOLD.get(channel, 1)
        assert len(chat_server.chat_requests) == 1  # the owner's ping only


def pairing_off(config: dict) -> None:
    config.setdefault("runtime", {})["pairing"] = False


#: Pairing off (``runtime.pairing: false``): a stranger is told their own id, once (conversation/strangers.py).
TOLD_THEIR_ID = {
    "discord": lambda request: _strangers_on_discord(request, pairing_off),
    "slack": lambda request: _strangers_on_slack(request, pairing_off),
    "telegram": lambda request: _strangers_on_telegram(request, pairing_off),
    "signal": lambda request: _strangers_on_signal(request, pairing_off),
    "whatsapp": lambda request: _strangers_on_whatsapp(request, pairing_off),
}
NOT_TOLD_THEIR_ID = {
    **NO_STRANGERS,
    "email": "a stranger is never answered by mail (backscatter)",
    "matrix": "no driver in TOLD_THEIR_ID yet (tests/test_matrix.py: a stranger refused once)",
}


class _StrangerIdCase:
    """A stranger without pairing."""

    def test_without_pairing_a_stranger_is_told_their_id_once(
        self, channel: str, request: pytest.FixtureRequest, chat_server
    ) -> None:
        if channel not in TOLD_THEIR_ID:
            pytest.skip(NOT_TOLD_THEIR_ID[channel])
        assert TOLD_THEIR_ID[channel](request) == 1
        assert len(chat_server.chat_requests) == 1  # the owner's ping only


# -- an allowed guest: answered in their own chat, with nothing of the owner's ---------------------------------

#: In the owner's context (context/me.md): the system prompt of the owner's own chat has it, a guest's never.
OWNER_SECRET = "owner-pin-4711"


@dataclasses.dataclass
class Chat:
    """One person's chat with the bot: what they send, and the bot's messages there as they show now."""

    send: Callable[[str], object]
    replies: Callable[[], list[str]]


@dataclasses.dataclass
class GuestChats:
    """The owner's one-to-one chat and an allowed guest's (allowed, not the owner) on a running channel."""

    owner: Chat
    guest: Chat


def _guests_on_telegram(request: pytest.FixtureRequest) -> GuestChats:
    from tests.telegram_harness import OWNER, texts

    fake = request.getfixturevalue("fake")
    request.getfixturevalue("start_bot")(allowed_user_ids=[OWNER, GUEST_TG])
    return GuestChats(
        Chat(fake.send_message, lambda: texts(fake)),
        Chat(lambda text: fake.send_message(text, user_id=GUEST_TG, username="guest"), lambda: texts(fake, GUEST_TG)),
    )


def _guests_on_signal(request: pytest.FixtureRequest) -> GuestChats:
    from tests.signal_harness import OWNER

    daemon = request.getfixturevalue("daemon")
    request.getfixturevalue("start")()  # allowed: the owner and GUEST_SIG

    def chat(number: str) -> Chat:
        return Chat(lambda text: daemon.message(number, text), lambda: [s["message"] for s in daemon.sent_to(number)])

    return GuestChats(chat(OWNER), chat(GUEST_SIG))


def _guests_on_email(request: pytest.FixtureRequest) -> GuestChats:
    from tests.email_harness import FRIEND, OWNER, body, mail

    imap, smtp = request.getfixturevalue("email_imap"), request.getfixturevalue("email_smtp")
    request.getfixturevalue("start_email")(patch=lambda config: config["llm"].update(stream=False))

    def chat(address: str) -> Chat:
        name, domain = address.split("@")
        proven = f"mx.{domain}; dkim=pass header.d={domain}"  # their provider proves who sent it

        def send(text: str) -> None:
            imap.append("INBOX", mail(text, sender=address, message_id=f"<{name}@{domain}>", auth=proven))

        def replies() -> list[str]:
            return [body(m).strip() for m, to in zip(smtp.messages, smtp.recipients, strict=True) if to == [address]]

        return Chat(send, replies)

    return GuestChats(chat(OWNER), chat(FRIEND))


def _guests_on_matrix(request: pytest.FixtureRequest) -> GuestChats:
    from tests.waiting import wait_until

    world, owner_room = _matrix_room(request)
    guest_room = world.friend.create_room([world.bot.user_id], direct=True)
    bot = world.bot.user_id
    wait_until(lambda: world.friend.members(guest_room).get(bot) == "join", 20, "the bot to join the friend's room")
    return GuestChats(
        Chat(lambda text: world.owner.send(owner_room, text), lambda: list(world.owner.texts(owner_room, bot))),
        Chat(lambda text: world.friend.send(guest_room, text), lambda: list(world.friend.texts(guest_room, bot))),
    )


def _guests_on_whatsapp(request: pytest.FixtureRequest) -> GuestChats:
    from tests.whatsapp_harness import OWNER

    graph, guest = request.getfixturevalue("whatsapp_graph"), GUEST_SIG.lstrip("+")
    request.getfixturevalue("start_whatsapp")(
        patch=lambda config: config["whatsapp"].update(allowed=[f"+{OWNER}", GUEST_SIG])
    )

    def chat(number: str) -> Chat:
        return Chat(lambda text: graph.user_text(number, text), lambda: graph.texts(number))

    return GuestChats(chat(OWNER), chat(guest))


def _with_guest(request: pytest.FixtureRequest, channel: str, owner: str, guest: str) -> typing.Any:
    """The team chat's fake (``<channel>_api``) with the guest's DM, and the channel started allowing both."""
    api = request.getfixturevalue(f"{channel}_api")
    api.add_user(guest)
    request.getfixturevalue(f"start_{channel}")(patch=lambda config: config[channel].update(allowed=[owner, guest]))
    return api


def _guests_on_slack(request: pytest.FixtureRequest) -> GuestChats:
    from tests.slack_harness import OWNER

    guest = "U0GUEST001"
    slack = _with_guest(request, "slack", OWNER, guest)

    def chat(user: str) -> Chat:
        def send(text: str) -> None:
            if text.startswith("/"):  # a command comes as the app's registered slash command (slash.py)
                assert slack.deliver_command(slack.slash(user, text)).status_code == 200
                return
            assert slack.deliver(slack.dm(user, text)).status_code == 200

        return Chat(send, lambda: [m["text"] for m in slack.posted(slack.add_user(user))])

    return GuestChats(chat(OWNER), chat(guest))


def _guests_on_discord(request: pytest.FixtureRequest) -> GuestChats:
    from tests.discord_harness import OWNER

    guest = "80351110224678999"
    discord = _with_guest(request, "discord", OWNER, guest)

    def chat(user: str) -> Chat:
        return Chat(
            lambda text: discord.dm(user, text), lambda: [m["content"] for m in discord.posted(discord.add_user(user))]
        )

    return GuestChats(chat(OWNER), chat(guest))


GUESTS = {
    "discord": _guests_on_discord,
    "slack": _guests_on_slack,
    "whatsapp": _guests_on_whatsapp,
    "telegram": _guests_on_telegram,
    "signal": _guests_on_signal,
    "email": _guests_on_email,
    "matrix": _guests_on_matrix,
}
#: Why a channel has no guests.
NO_GUESTS = {
    "console": "the terminal chat has one user, its owner",
    "webchat": "the Chat page has one user, the owner signed in to the page",
}


class _GuestCase:
    """An allowed guest."""

    def test_an_allowed_guest_is_answered_in_their_own_chat_with_nothing_of_the_owners(
        self, channel: str, request: pytest.FixtureRequest, chat_server, workspace
    ) -> None:
        """Only the owner's own one-to-one chat sees the owner's data (``TurnMessage.owner_chat``): a guest's turn
        gets no owner context, the owner's next turn does; each reply goes to the chat it answers; where the
        channel takes commands, the guest's owner-only one is refused (``ChannelIntake.command``'s
        ``owner_data``)."""
        from tests.waiting import wait_until

        if channel not in GUESTS:
            pytest.skip(NO_GUESTS[channel])
        workspace.write_text("context/me.md", f"The owner's PIN is {OWNER_SECRET}.\n")
        chat_server.enqueue('{"reply": "Hello guest. END"}', '{"reply": "Hello owner. END"}')
        chats = GUESTS[channel](request)
        chats.guest.send("hello, who else do you talk to?")
        wait_until(lambda: "Hello guest. END" in chats.guest.replies(), 30, "the guest's reply")
        chats.owner.send("hello again")
        wait_until(lambda: "Hello owner. END" in chats.owner.replies(), 30, "the owner's reply")
        if channel in COMMAND_CHATS:  # an owner-only command from the guest: refused, by no model
            chats.guest.send("/jobs")
            refused = owner_only_text("jobs")
            wait_until(lambda: any(refused in text for text in chats.guest.replies()), 30, "/jobs refused")
        guest_turn, owner_turn = (json.dumps(r["messages"]) for r in chat_server.chat_requests)
        assert "who else" in guest_turn and OWNER_SECRET not in guest_turn
        assert "hello again" in owner_turn and OWNER_SECRET in owner_turn  # the owner's chat: their context
        assert not [text for text in chats.owner.replies() if "Hello guest" in text]
        assert not [text for text in chats.guest.replies() if "Hello owner" in text]


# -- a message the platform delivers again: answered once ----------------------------------------------------


@dataclasses.dataclass
class RepeatingChat(Chat):
    """The owner's chat on a platform that may deliver a message again (a lost confirmation, a reconnect's
    replay, a webhook's retry): ``again`` delivers the owner's last message once more, as the platform would."""

    again: Callable[[], object] = lambda: None


def queued(config: dict[str, typing.Any]) -> None:
    """The AGAIN drivers' config: busy mode ``queue``, so that a copy taken as a new message is a turn of its own
    (with ``steer`` a copy that came while its original was answered joined that turn, and hid)."""
    busy_mode("queue")(config)


def _again_on_telegram(request: pytest.FixtureRequest) -> RepeatingChat:
    from tests.telegram_harness import texts

    fake, sent = request.getfixturevalue("fake"), []
    request.getfixturevalue("start_bot")(config_patch=queued)
    return RepeatingChat(
        lambda text: sent.append(fake.send_message(text)), lambda: texts(fake), lambda: fake.redeliver(sent[-1])
    )


def _again_on_signal(request: pytest.FixtureRequest) -> RepeatingChat:
    from tests.signal_harness import OWNER

    daemon, sent = request.getfixturevalue("daemon"), []
    request.getfixturevalue("start")(patch=queued)
    return RepeatingChat(
        lambda text: sent.append(daemon.message(OWNER, text)),
        lambda: [s["message"] for s in daemon.sent_to(OWNER)],
        lambda: daemon.deliver(sent[-1]),  # the same envelope: its sender and timestamp
    )


def _again_on_email(request: pytest.FixtureRequest) -> RepeatingChat:
    """The same mail (its Message-ID) lands in the folder once more: a second copy, under a new UID."""
    from tests.email_harness import body, mail

    imap, smtp, sent = request.getfixturevalue("email_imap"), request.getfixturevalue("email_smtp"), []
    request.getfixturevalue("start_email")(patch=lambda config: (queued(config), config["llm"].update(stream=False)))

    def send(text: str) -> None:
        sent.append(mail(text, message_id=f"<again-{len(sent)}@example.org>"))
        imap.append("INBOX", sent[-1])

    return RepeatingChat(send, lambda: [body(m).strip() for m in smtp.messages], lambda: imap.append("INBOX", sent[-1]))


def _again_on_whatsapp(request: pytest.FixtureRequest) -> RepeatingChat:
    """Meta posts the same message to the webhook again (it retries until it heard 200 in time)."""
    from tests.whatsapp_harness import OWNER

    graph, sent = request.getfixturevalue("whatsapp_graph"), []
    request.getfixturevalue("start_whatsapp")(patch=queued)

    def send(text: str) -> None:
        sent.append(graph.message_event(OWNER, graph.inbound(OWNER, "text", {"body": text})))
        assert graph.deliver(sent[-1]) == 200

    return RepeatingChat(send, lambda: graph.texts(OWNER), lambda: graph.deliver(sent[-1]))


def _again_on_slack(request: pytest.FixtureRequest) -> RepeatingChat:
    """Slack sends the same event again, with its retry number (it retries until it heard 200 in time)."""
    from tests.slack_harness import OWNER, owner_texts

    slack, sent = request.getfixturevalue("slack_api"), []
    request.getfixturevalue("start_slack")(patch=queued)

    def send(text: str) -> None:
        sent.append(slack.dm(OWNER, text))
        assert slack.deliver(sent[-1]).status_code == 200

    return RepeatingChat(send, lambda: owner_texts(slack), lambda: slack.deliver(sent[-1], retry_num=1))


def _again_on_discord(request: pytest.FixtureRequest) -> RepeatingChat:
    """The gateway dispatches the same MESSAGE_CREATE again (a RESUME replays it)."""
    from tests.discord_harness import OWNER, owner_texts

    discord, sent = request.getfixturevalue("discord_api"), []
    request.getfixturevalue("start_discord")(patch=queued)
    return RepeatingChat(
        lambda text: sent.append(discord.dm(OWNER, text)),
        lambda: owner_texts(discord),
        lambda: discord.redeliver(sent[-1]),
    )


def _again_on_webchat(request: pytest.FixtureRequest) -> RepeatingChat:
    """The page posts the same message (its id) again: a retry after a lost answer."""
    chat, sent = request.getfixturevalue("start_webchat")(patch=queued), []
    assert chat.client is not None

    def post(body: dict[str, str]) -> None:
        answer = chat.client.post("/chat/send", json=body, headers={"X-XSRFToken": chat.form_token})
        assert answer.status_code == 202, answer.text

    def send(text: str) -> None:
        sent.append({"id": f"again{len(sent)}" * 4, "text": text})
        post(sent[-1])

    return RepeatingChat(send, chat.replies, lambda: post(sent[-1]))


AGAIN = {
    "discord": _again_on_discord,
    "slack": _again_on_slack,
    "whatsapp": _again_on_whatsapp,
    "webchat": _again_on_webchat,
    "telegram": _again_on_telegram,
    "signal": _again_on_signal,
    "email": _again_on_email,
}
#: Why a channel's platform never delivers a message again.
NOT_AGAIN = {
    "console": "the terminal chat reads each typed line once",
    "matrix": "no driver in AGAIN yet: Synapse sends an event once per sync position (the inbox takes a Matrix "
    "message by its event id: channels/matrix/events.py)",
}


class _AgainCase:
    """A message delivered again."""

    def test_a_message_the_platform_delivers_again_is_answered_once(
        self, channel: str, request: pytest.FixtureRequest, chat_server, workspace
    ) -> None:
        """The inbox takes the platform's message id once (``Arrival.source_id``): delivered again while it is
        answered, or after, it is no new turn; the owner's next message still is."""
        from assistant_framework.inbox import Inbox
        from tests.waiting import wait_until

        if channel not in AGAIN:
            pytest.skip(NOT_AGAIN[channel])
        # A copy taken as a message would be a turn of its own, and take the next answer: each one is distinct.
        chat_server.enqueue(*(json.dumps({"reply": f"{word} END"}) for word in ("Once.", "pong", "Twice.", "Thrice.")))
        chat = AGAIN[channel](request)
        chat.send("hello")
        assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")
        chat.again()  # while it is answered
        wait_until(lambda: "Once. END" in chat.replies(), 30, "the reply")
        wait_until(lambda: not Inbox(workspace).pending(), 15, "the message completed")
        chat.again()  # after its reply
        chat.send("ping")  # after the copies: once the model has it, they were taken or passed over
        wait_until(lambda: any("ping" in str(r["messages"][-1]) for r in chat_server.chat_requests), 30, "ping")
        wait_until(lambda: not Inbox(workspace).pending(), 30, "every message completed")
        assert [text for text in chat.replies() if "END" in text] == ["Once. END", "pong END"]
        assert len(chat_server.chat_requests) == 2, [str(r["messages"][-1])[:100] for r in chat_server.chat_requests]


# -- a message the inbox cannot store: not confirmed to the platform, answered after the next start ------------


@dataclasses.dataclass
class RestartingChat(Chat):
    """The owner's chat on a running channel that the case stops (``stop``) and starts again (``start``); the
    platform delivers again, after the start, what it was not told arrived (a webhook's POST not answered 200 is
    posted again: the driver keeps it and posts it once the channel runs again, as the platform's retry)."""

    stop: Callable[[], object] = lambda: None
    start: Callable[[], object] = lambda: None


def _held_on_telegram(request: pytest.FixtureRequest) -> RestartingChat:
    """Polling: an update not stored is not confirmed (the next getUpdates' offset stays before it)."""
    from tests.telegram_harness import texts

    fake, start = request.getfixturevalue("fake"), request.getfixturevalue("start_bot")
    running = [start(config_patch=queued)]
    return RestartingChat(
        fake.send_message,
        lambda: texts(fake),
        lambda: running[-1].stop(timeout=20),
        lambda: running.append(start(config_patch=queued)),
    )


def _webhook_retried(
    request: pytest.FixtureRequest, start_fixture: str, post: Callable[[dict], bool], payload: Callable[[str], dict]
) -> tuple[Callable[[str], None], Callable[[], None], Callable[[], None]]:
    """(send, stop, start) of a channel that takes a platform's webhook: ``post`` a ``payload`` (True: answered
    200); one not answered 200 is posted again once the channel was started again."""
    start, refused = request.getfixturevalue(start_fixture), []
    running = [start(patch=queued)]

    def send(text: str) -> None:
        body = payload(text)
        if not post(body):
            refused.append(body)  # the platform sends it again later

    def start_again() -> None:
        running.append(start(patch=queued))
        while refused:
            assert post(refused.pop(0)), "the webhook's retry was refused again"

    return send, lambda: running[-1].stop(), start_again


def _held_on_whatsapp(request: pytest.FixtureRequest) -> RestartingChat:
    from tests.whatsapp_harness import OWNER

    graph = request.getfixturevalue("whatsapp_graph")
    send, stop, start = _webhook_retried(
        request,
        "start_whatsapp",
        lambda body: graph.deliver(body) == 200,
        lambda text: graph.message_event(OWNER, graph.inbound(OWNER, "text", {"body": text})),
    )
    return RestartingChat(send, lambda: graph.texts(OWNER), stop, start)


def _held_on_slack(request: pytest.FixtureRequest) -> RestartingChat:
    from tests.slack_harness import OWNER, owner_texts

    slack = request.getfixturevalue("slack_api")
    send, stop, start = _webhook_retried(
        request,
        "start_slack",
        lambda body: slack.deliver(body).status_code == 200,
        lambda text: slack.dm(OWNER, text),
    )
    return RestartingChat(send, lambda: owner_texts(slack), stop, start)


def _held_on_discord(request: pytest.FixtureRequest) -> RestartingChat:
    """The gateway never sends a message again: one held in memory when the channel stops is read from the DM's
    history after the next start (channels/discord/catchup.py)."""
    from tests.discord_harness import OWNER, owner_texts

    discord, start = request.getfixturevalue("discord_api"), request.getfixturevalue("start_discord")
    running = [start(patch=queued)]
    return RestartingChat(
        lambda text: discord.dm(OWNER, text),
        lambda: owner_texts(discord),
        lambda: running[-1].stop(),
        lambda: running.append(start(patch=queued)),
    )


HELD = {
    "discord": _held_on_discord,
    "slack": _held_on_slack,
    "whatsapp": _held_on_whatsapp,
    "telegram": _held_on_telegram,
}
#: Why a channel has no driver here.
NOT_HELD = {
    "signal": "signal-cli delivers an event once: one held while the inbox cannot store is lost at a stop, and "
    "logged so (tests/test_inbox_held.py: held and answered once storage works, without a stop)",
    "matrix": "no driver in HELD yet",
    "email": "no driver in HELD yet",
    "webchat": "no driver in HELD yet: the page posts a message again when it was not taken",
    "console": "the terminal's line is typed once: no driver in HELD yet",
}


class _HeldCase:
    """A message the inbox cannot store."""

    def test_a_message_the_inbox_cannot_store_is_answered_once_after_a_restart(
        self,
        channel: str,
        request: pytest.FixtureRequest,
        chat_server,
        workspace,
        caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """Stored before the platform is told it arrived (docs/channels.md, step 1): a message that cannot be
        stored is held unconfirmed, or refused so that the platform sends it again; the channel stopped meanwhile
        and started once storage works, the platform delivers it again and it is answered, once."""
        import logging

        from assistant_framework.inbox import Inbox
        from messaging_llm_bot.conversation import held
        from tests.inbox_faults import break_inbox, repair_inbox
        from tests.waiting import wait_until

        if channel not in HELD:
            pytest.skip(NOT_HELD[channel])
        monkeypatch.setattr(held, "RETRY_FIRST_SECONDS", 0.05)
        monkeypatch.setattr(held, "RETRY_MAX_SECONDS", 0.1)
        chat_server.enqueue(*(json.dumps({"reply": f"{word} END"}) for word in ("First.", "Held.", "Twice.")))
        chat = HELD[channel](request)
        chat.send("first")
        wait_until(lambda: "First. END" in chat.replies(), 30, "the first reply")
        wait_until(lambda: not Inbox(workspace).pending(), 15, "the first message completed")
        pending = break_inbox(workspace)
        with caplog.at_level(logging.ERROR, logger="messaging_llm_bot.conversation.held"):
            chat.send("held one")
            wait_until(lambda: "the inbox cannot store messages" in caplog.text, 15, "the failed store")
        chat.stop()
        repair_inbox(pending)
        chat.start()
        wait_until(lambda: "Held. END" in chat.replies(), 30, "the held message's reply after the start")
        wait_until(lambda: not Inbox(workspace).pending(), 15, "the held message completed")
        assert [text for text in chat.replies() if "END" in text] == ["First. END", "Held. END"]
        asked = [str(r["messages"][-1])[:100] for r in chat_server.chat_requests]
        assert len(asked) == 2 and "held one" in asked[1], asked


# -- a reply the platform cannot take now: kept in the inbox, sent once when the platform takes it again ------------


@dataclasses.dataclass
class RefusingChat(Chat):
    """The owner's chat on a platform that can refuse the bot's sends for now (unavailable, rate limiting):
    ``refuse`` makes it refuse every send from then on, as a platform that may take it later does, ``allow``
    lets the sends through again, ``refused`` counts the sends it refused."""

    refuse: Callable[[], object] = lambda: None
    allow: Callable[[], object] = lambda: None
    refused: Callable[[], int] = lambda: 0


MANY = 10**6  # refusals queued in a fake that counts them down: "until allowed"


def _later_on_telegram(request: pytest.FixtureRequest) -> RefusingChat:
    """``sendMessage`` answered 502 (PTB's NetworkError: Telegram's side cannot take it now)."""
    from tests.telegram_harness import texts

    fake = request.getfixturevalue("fake")
    request.getfixturevalue("start_bot")(config_patch=queued)
    return RefusingChat(
        fake.send_message,
        lambda: texts(fake),
        lambda: fake.fail_next("sendMessage", status=502, times=MANY),
        lambda: fake.faults_left("sendMessage", clear=True),
        lambda: MANY - fake.faults_left("sendMessage"),
    )


def _later_on_signal(request: pytest.FixtureRequest) -> RefusingChat:
    """signal-cli's ``send`` answered -5 (a rate limit: transient)."""
    from tests.fakes.signal_daemon import RpcError
    from tests.signal_harness import OWNER

    daemon = request.getfixturevalue("daemon")
    request.getfixturevalue("start")(patch=queued)
    return RefusingChat(
        lambda text: daemon.message(OWNER, text),
        lambda: [s["message"] for s in daemon.sent_to(OWNER)],
        lambda: daemon.send_errors.extend([RpcError(-5, "Rate limit exceeded")] * MANY),
        daemon.send_errors.clear,
        lambda: MANY - len(daemon.send_errors),
    )


def _later_on_slack(request: pytest.FixtureRequest) -> RefusingChat:
    """``chat.postMessage`` answered 429 ``ratelimited`` with a short ``Retry-After``."""
    from tests.slack_harness import OWNER, owner_texts

    slack = request.getfixturevalue("slack_api")
    request.getfixturevalue("start_slack")(patch=queued)

    def send(text: str) -> None:
        assert slack.deliver(slack.dm(OWNER, text)).status_code == 200

    return RefusingChat(
        send,
        lambda: owner_texts(slack),
        lambda: slack.ratelimit("chat.postMessage", MANY, 0.2),
        lambda: slack.ratelimit("chat.postMessage", 0),
        lambda: MANY - slack.limits.get("chat.postMessage", (MANY, 0))[0],
    )


def _later_on_whatsapp(request: pytest.FixtureRequest) -> RefusingChat:
    """The Graph API refuses every message with #130429 (Meta's throughput reached: later)."""
    from tests.whatsapp_harness import OWNER

    graph = request.getfixturevalue("whatsapp_graph")
    request.getfixturevalue("start_whatsapp")(patch=queued)

    def send(text: str) -> None:
        assert graph.deliver(graph.message_event(OWNER, graph.inbound(OWNER, "text", {"body": text}))) == 200

    return RefusingChat(
        send, lambda: graph.texts(OWNER), graph.throttle, lambda: graph.throttle(False), lambda: graph.refused
    )


def _later_on_discord(request: pytest.FixtureRequest) -> RefusingChat:
    """``POST /channels/{id}/messages`` answered 503 (discord.py does not retry it: the channel's loop does)."""
    from tests.discord_harness import OWNER, owner_texts

    discord = request.getfixturevalue("discord_api")
    request.getfixturevalue("start_discord")(patch=queued)
    route = "POST /channels/{channel_id}/messages"
    return RefusingChat(
        lambda text: discord.dm(OWNER, text),
        lambda: owner_texts(discord),
        lambda: discord.outage(route),
        lambda: discord.outage(route, False),
        lambda: discord.refused,
    )


LATER = {
    "telegram": _later_on_telegram,
    "signal": _later_on_signal,
    "slack": _later_on_slack,
    "discord": _later_on_discord,
    "whatsapp": _later_on_whatsapp,
}
#: Why a channel has no driver here.
NOT_LATER = {
    "matrix": "Synapse refuses no send on the test's word: no driver in LATER",
    "email": "the SMTP fake refuses no mail for now yet: no driver in LATER",
    "webchat": "the page's reply is kept for the page to fetch: nothing refuses it",
    "console": "the terminal prints the reply: nothing refuses it",
}


class _LaterCase:
    """A reply the platform cannot take now."""

    def test_a_reply_the_platform_cannot_take_now_waits_in_the_inbox_and_goes_out_once(
        self, channel: str, request: pytest.FixtureRequest, chat_server, workspace
    ) -> None:
        """While the platform refuses the bot's sends for now, the reply stays in the inbox (its message not
        completed) and is tried again; once the platform takes sends again it goes out, once, and the model was
        asked once; the next message is answered as usual."""
        from assistant_framework.inbox import Inbox
        from tests.waiting import wait_until

        if channel not in LATER:
            pytest.skip(NOT_LATER[channel])
        chat_server.enqueue(*(json.dumps({"reply": f"{word} END"}) for word in ("Later.", "pong")))
        chat = LATER[channel](request)
        chat.refuse()
        chat.send("hello")
        assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")
        wait_until(lambda: chat.refused() >= 2, 30, "the send refused, and tried again")
        assert Inbox(workspace).pending(), "the message is completed only once its reply is out"
        assert not any("END" in text for text in chat.replies())
        chat.allow()
        wait_until(lambda: "Later. END" in chat.replies(), 30, "the reply once the platform takes sends again")
        wait_until(lambda: not Inbox(workspace).pending(), 15, "the message completed")
        chat.send("ping")
        wait_until(lambda: "pong END" in chat.replies(), 30, "the next answer")
        assert [text for text in chat.replies() if "END" in text] == ["Later. END", "pong END"]
        assert len(chat_server.chat_requests) == 2, [str(r["messages"][-1])[:100] for r in chat_server.chat_requests]


# -- a streamed reply: edits where the channel can edit, else one final message ---------------------------

WORDS = [f"word{i} " for i in range(14)]
# The editing channels edit at most once per their ``edit_interval_seconds`` (1 s by default: the platforms'
# rate limits); against the fakes the test sets it to 0.1 s. The model's stream is held at three points until
# the platform shows the words so far (``_held_until_shown``): the first message can hold at most word0-word4,
# so word9 and then word13 can only be shown by two edits before the end, however slow the machine is. A
# channel that does not edit never shows word9 before the end: the hold gives up after a while, and the count
# of edits fails the test. (With the default interval the holds only wait longer.) The holds alone pace an
# editing channel's stream. The wait before a first live message (conversation/progress.py
# FIRST_MESSAGE_GRACE_SECONDS, 0.3 s) is FIRST_MESSAGE_GRACE here (the channels run in the test's process; one
# that does not, Matrix's, keeps the product's). A channel that cannot edit gets the pieces UNEDITED_PACE apart:
# the stream lasts 0.45 s, nine times that grace and as long past it as before (0.75 s past 0.3 s), so one that
# wrongly showed the answer as it grew would send a partial message.
EDIT_INTERVAL = 0.1
FIRST_MESSAGE_GRACE = 0.05
STREAMED = {"content": "".join(WORDS) + "END", "stream_chunks": [*WORDS, "END"]}
UNEDITED_PACE = 0.03
#: Before the chunk of this index is sent, the platform must show the word before it.
HOLDS = (5, 10, len(WORDS))


@dataclasses.dataclass
class Shown:
    """What an editing channel's platform has shown of the answer so far: every text sent or edited in.
    The channel's driver sets ``texts`` before the owner writes; a channel that cannot edit leaves it None."""

    texts: Callable[[], list[str]] | None = None


def _held_until_shown(shown: Shown) -> Callable[[int], None]:
    """The stream's ``chunk_gate``: at each of HOLDS, wait until some text the platform shows has the word
    before it (at most 20 s; then the stream goes on and the count of edits says what was missing)."""
    from tests.waiting import wait_until

    def gate(index: int) -> None:
        texts = shown.texts
        if texts is None or index not in HOLDS:
            return
        word = WORDS[index - 1].strip()
        try:
            wait_until(lambda: any(word in text for text in texts()), timeout=20, what=f"{word} shown")
        except AssertionError:
            pass  # the test's own assertion names what was shown

    return gate


def streaming(section: str | None = None) -> Callable[[dict[str, typing.Any]], None]:
    """A config patch: the model's answer streamed, and the channel ``section`` editing every EDIT_INTERVAL."""

    def patch(config: dict[str, typing.Any]) -> None:
        config["llm"].update(stream=True)
        if section is not None:
            config[section]["edit_interval_seconds"] = EDIT_INTERVAL

    return patch


def _edited_texts(fake: typing.Any) -> list[str]:
    return [c["params"]["text"] for c in fake.calls("editMessageText") if c["status"] == 200]


def _stream_on_telegram(request: pytest.FixtureRequest, shown: Shown) -> tuple[int, list[str]]:
    """(partial texts shown by edits, the messages left in the owner's chat)."""
    from tests.telegram_harness import texts

    fake = request.getfixturevalue("fake")
    request.getfixturevalue("start_bot")(stream=True, edit_interval_seconds=EDIT_INTERVAL)
    shown.texts = lambda: texts(fake) + _edited_texts(fake)
    fake.send_message("stream please")
    fake.wait_for(lambda: any(t.endswith("END") for t in texts(fake)), timeout=30)
    edits = _edited_texts(fake)
    return len([e for e in edits if e.startswith("word0") and not e.endswith("END")]), texts(fake)


def _stream_on_signal(request: pytest.FixtureRequest, shown: Shown) -> tuple[int, list[str]]:
    from tests.signal_harness import OWNER, wait_for

    daemon = request.getfixturevalue("daemon")
    request.getfixturevalue("start")(patch=streaming())
    daemon.message(OWNER, "stream please")
    wait_for(lambda: any(s["message"].endswith("END") for s in daemon.sent_to(OWNER)), what="the reply", timeout=30)
    return 0, [s["message"] for s in daemon.sent_to(OWNER)]  # signal-cli cannot edit a sent message


class _Screen(io.StringIO):
    """The terminal's stdout, with the answer's pieces counted as they are written."""

    def __init__(self) -> None:
        super().__init__()
        self.pieces = 0

    def write(self, text: str) -> int:
        self.pieces += "word" in text
        return super().write(text)


def _stream_on_the_terminal(request: pytest.FixtureRequest, shown: Shown) -> tuple[int, list[str]]:
    """The terminal cannot edit; it prints the answer as it streams in, then the rest of the block."""
    from messaging_llm_bot.channels.console.chat import run_console
    from tests.telegram_harness import make_runtime

    config = {**request.getfixturevalue("bot_config"), "memory": {"enabled": False}}
    config["llm"] = {**config["llm"], "stream": True}
    runtime = make_runtime(config, request.getfixturevalue("workspace"), request.getfixturevalue("tmp_path"))
    screen = _Screen()
    try:
        assert run_console(runtime, _Tty(["stream please\n"]), screen, io.StringIO()) == 0
    finally:
        runtime.shutdown(5)
    assert screen.pieces >= 2  # shown as it came, not only at the end
    return 0, [screen.getvalue().strip().removesuffix("you>").strip()]  # the next prompt is not part of the answer


def _stream_on_email(request: pytest.FixtureRequest, shown: Shown) -> tuple[int, list[str]]:
    from tests.email_harness import body, mail
    from tests.waiting import wait_until

    imap, smtp = request.getfixturevalue("email_imap"), request.getfixturevalue("email_smtp")
    request.getfixturevalue("start_email")(patch=streaming())
    imap.append("INBOX", mail("stream please", message_id="<stream@example.org>"))
    wait_until(lambda: any(body(m).strip().endswith("END") for m in smtp.messages), 30, "the reply")
    return 0, [body(m).strip() for m in smtp.messages]  # a sent mail cannot be edited


def _stream_on_matrix(request: pytest.FixtureRequest, shown: Shown) -> tuple[int, list[str]]:
    world, room = _matrix_room(request, patch=streaming("matrix"))
    bot = world.bot.user_id
    shown.texts = lambda: world.owner.texts(room, bot) + world.owner.edits(room, bot)
    world.owner.send(room, "stream please")
    shown = _bot_texts_until(world, room, lambda texts: any(t.endswith("END") for t in texts))
    edits = world.owner.edits(room, world.bot.user_id)
    return len([e for e in edits if e.startswith("word0") and not e.endswith("END")]), shown


def _stream_on_webchat(request: pytest.FixtureRequest, shown: Shown) -> tuple[int, list[str]]:
    """The page shows the growing answer as live text, never as a message: the messages are the final one."""
    chat = request.getfixturevalue("start_webchat")()
    chat.send("stream please")
    return 0, chat.replies_until(lambda texts: any(t.endswith("END") for t in texts))


def _stream_on_whatsapp(request: pytest.FixtureRequest, shown: Shown) -> tuple[int, list[str]]:
    """WhatsApp cannot edit a sent message: the streamed answer goes out once, when it is done."""
    from tests.whatsapp_harness import OWNER

    graph = request.getfixturevalue("whatsapp_graph")
    request.getfixturevalue("start_whatsapp")(patch=streaming())
    graph.user_text(OWNER, "stream please")
    return 0, _whatsapp_texts_until(request, lambda texts: any(t.endswith("END") for t in texts))


def _stream_on_slack(request: pytest.FixtureRequest, shown: Shown) -> tuple[int, list[str]]:
    """Slack edits the answer in place (chat.update): how many edits showed it before its end."""
    from tests.slack_harness import OWNER, owner_texts, owner_writes

    slack = request.getfixturevalue("slack_api")
    request.getfixturevalue("start_slack")(patch=streaming("slack"))
    shown.texts = lambda: [text for m in slack.posted(slack.dms[OWNER]) for text in m["history"]]
    owner_writes(slack, "stream please")
    shown = _slack_texts_until(request, lambda texts: any(t.endswith("END") for t in texts))
    [message] = [m for m in slack.posted(slack.dms[OWNER]) if m["text"] == shown[-1]]
    return _partial_edits(message["history"]), owner_texts(slack)


def _partial_edits(history: list[str]) -> int:
    """How many edits of a message (its texts in turn, the first as sent) showed the answer before its end."""
    return len([text for text in history[1:] if text.startswith("word0") and not text.endswith("END")])


def _stream_on_discord(request: pytest.FixtureRequest, shown: Shown) -> tuple[int, list[str]]:
    """Discord edits the answer in place: how many edits showed it before its end."""
    from tests.discord_harness import OWNER, owner_texts, owner_writes

    discord = request.getfixturevalue("discord_api")
    request.getfixturevalue("start_discord")(patch=streaming("discord"))
    shown.texts = lambda: [text for m in discord.posted(discord.dms[OWNER]) for text in m["history"]]
    owner_writes(discord, "stream please")
    shown = _discord_texts_until(request, lambda texts: any(t.endswith("END") for t in texts))
    [message] = [m for m in discord.posted(discord.dms[OWNER]) if m["content"] == shown[-1]]
    return _partial_edits(message["history"]), owner_texts(discord)


STREAM = {
    "discord": _stream_on_discord,
    "slack": _stream_on_slack,
    "whatsapp": _stream_on_whatsapp,
    "webchat": _stream_on_webchat,
    "telegram": _stream_on_telegram,
    "signal": _stream_on_signal,
    "email": _stream_on_email,
    "console": _stream_on_the_terminal,
    "matrix": _stream_on_matrix,
}


class _StreamCase:
    """A streamed reply."""

    def test_a_streamed_reply_grows_by_edits_where_the_channel_can_edit_else_arrives_as_one_message(
        self, channel: str, request: pytest.FixtureRequest, chat_server, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from messaging_llm_bot.conversation import progress

        monkeypatch.setattr(progress, "FIRST_MESSAGE_GRACE_SECONDS", FIRST_MESSAGE_GRACE)
        capabilities, _split = CHANNELS[channel]()
        watch = Shown()
        pace = {} if capabilities.can_edit else {"chunk_delay": UNEDITED_PACE}
        chat_server.enqueue({**STREAMED, **pace, "chunk_gate": _held_until_shown(watch)})
        partial, shown = STREAM[channel](request, watch)
        assert chat_server.chat_requests[0]["stream"] is True
        assert [text for text in shown if "word0" in text] == [shown[-1]] and shown[-1].endswith("word13 END")
        assert shown[-1].count("word0") == 1  # the answer once, not the stream and then the reply again
        if capabilities.can_edit:
            assert partial >= 2  # the answer grew in place, then became the reply
        else:
            assert partial == 0 and len(shown) == 1  # no partial message: one final message


# -- a photo and a file in ------------------------------------------------------------------------------

MENU = b"%PDF-1.4 the menu of the day"


def _media_on_telegram(request: pytest.FixtureRequest, photo: bytes) -> None:
    from tests.telegram_harness import OWNER, texts

    fake = request.getfixturevalue("fake")
    request.getfixturevalue("start_bot")(config_patch=with_vision(request.getfixturevalue("chat_server")))
    fake.send_photo(OWNER, photo, caption="what is this?", width=600, height=400)
    fake.wait_for(lambda: "Seen. END" in texts(fake), timeout=30)
    fake.send_document(OWNER, "menu.pdf", MENU, caption="the menu", mime_type="application/pdf")
    fake.wait_for(lambda: "Filed. END" in texts(fake), timeout=30)


def _media_on_signal(request: pytest.FixtureRequest, photo: bytes) -> None:
    from tests.signal_harness import OWNER

    daemon = request.getfixturevalue("daemon")
    request.getfixturevalue("start")(patch=with_vision(request.getfixturevalue("chat_server")))
    daemon.message(OWNER, "what is this?", attachments=[daemon.add_attachment(photo, "image/jpeg", filename="p.jpg")])
    daemon.wait_sent(1, timeout=30)
    menu = daemon.add_attachment(MENU, "application/pdf", filename="menu.pdf")
    daemon.message(OWNER, "the menu", attachments=[menu])
    daemon.wait_sent(2, timeout=30)


def with_vision(chat_server: typing.Any) -> Callable[[dict[str, typing.Any]], None]:
    def patch(config: dict[str, typing.Any]) -> None:
        eyes = {"name": "eyes", "base_url": chat_server.base_url, "model": "vision-model", "vision": True}
        config["llm"]["runners"].append(eyes)

    return patch


def _media_on_email(request: pytest.FixtureRequest, photo: bytes) -> None:
    from tests.email_harness import mail, wait_mails

    imap, smtp = request.getfixturevalue("email_imap"), request.getfixturevalue("email_smtp")
    request.getfixturevalue("start_email")(patch=with_vision(request.getfixturevalue("chat_server")))
    imap.append(
        "INBOX", mail("what is this?", message_id="<p@example.org>", attachments=[("p.jpg", "image/jpeg", photo)])
    )
    wait_mails(smtp, 1, timeout=30)
    menu = [("menu.pdf", "application/pdf", MENU)]
    imap.append("INBOX", mail("the menu", message_id="<menu@example.org>", attachments=menu))
    wait_mails(smtp, 2, timeout=30)


def _media_on_matrix(request: pytest.FixtureRequest, photo: bytes) -> None:
    world, room = _matrix_room(request, patch=with_vision(request.getfixturevalue("chat_server")))
    owner = world.owner
    url = owner.upload(photo, "image/jpeg", "p.jpg")
    info = {"mimetype": "image/jpeg", "size": len(photo), "w": 600, "h": 400}
    owner.send(room, "what is this?", msgtype="m.image", filename="p.jpg", url=url, info=info)
    _bot_texts_until(world, room, lambda texts: "Seen. END" in texts)
    url = owner.upload(MENU, "application/pdf", "menu.pdf")
    info = {"mimetype": "application/pdf", "size": len(MENU)}
    owner.send(room, "the menu", msgtype="m.file", filename="menu.pdf", url=url, info=info)
    _bot_texts_until(world, room, lambda texts: "Filed. END" in texts)


def _media_on_webchat(request: pytest.FixtureRequest, photo: bytes) -> None:
    chat = request.getfixturevalue("start_webchat")(patch=with_vision(request.getfixturevalue("chat_server")))
    assert chat.client is not None
    for name, mime, data, caption, done in [
        ("p.jpg", "image/jpeg", photo, "what is this?", "Seen. END"),
        ("menu.pdf", "application/pdf", MENU, "the menu", "Filed. END"),
    ]:
        sent = chat.client.post(
            f"/chat/upload?id={name.replace('.', '') * 4}&name={name}&text={caption}",
            content=data,
            headers={"Content-Type": mime, "X-XSRFToken": chat.form_token},
        )
        assert sent.status_code == 202, sent.text
        chat.replies_until(lambda texts, done=done: done in texts)


def _media_on_whatsapp(request: pytest.FixtureRequest, photo: bytes) -> None:
    from tests.whatsapp_harness import OWNER

    graph = request.getfixturevalue("whatsapp_graph")
    request.getfixturevalue("start_whatsapp")(patch=with_vision(request.getfixturevalue("chat_server")))
    graph.user_media(OWNER, "image", photo, "image/jpeg", caption="what is this?")
    _whatsapp_texts_until(request, lambda texts: "Seen. END" in texts)
    graph.user_media(OWNER, "document", MENU, "application/pdf", caption="the menu", filename="menu.pdf")
    _whatsapp_texts_until(request, lambda texts: "Filed. END" in texts)


def _media_on_slack(request: pytest.FixtureRequest, photo: bytes) -> None:
    from tests.slack_harness import OWNER

    slack = request.getfixturevalue("slack_api")
    request.getfixturevalue("start_slack")(patch=with_vision(request.getfixturevalue("chat_server")))
    assert slack.deliver(slack.user_file(OWNER, "p.jpg", "image/jpeg", photo, "what is this?")).status_code == 200
    _slack_texts_until(request, lambda texts: "Seen. END" in texts)
    assert slack.deliver(slack.user_file(OWNER, "menu.pdf", "application/pdf", MENU, "the menu")).status_code == 200
    _slack_texts_until(request, lambda texts: "Filed. END" in texts)


def _media_on_discord(request: pytest.FixtureRequest, photo: bytes) -> None:
    from tests.discord_harness import OWNER

    discord = request.getfixturevalue("discord_api")
    request.getfixturevalue("start_discord")(patch=with_vision(request.getfixturevalue("chat_server")))
    discord.dm(OWNER, "what is this?", files={"p.jpg": photo})
    _discord_texts_until(request, lambda texts: "Seen. END" in texts)
    discord.dm(OWNER, "the menu", files={"menu.pdf": MENU})
    _discord_texts_until(request, lambda texts: "Filed. END" in texts)


MEDIA = {
    "discord": _media_on_discord,
    "slack": _media_on_slack,
    "whatsapp": _media_on_whatsapp,
    "webchat": _media_on_webchat,
    "telegram": _media_on_telegram,
    "signal": _media_on_signal,
    "email": _media_on_email,
    "matrix": _media_on_matrix,
}


class _MediaInCase:
    """A photo and a file in."""

    def test_a_photo_reaches_the_vision_runner_and_a_file_is_saved_and_named_to_the_model(
        self, channel: str, request: pytest.FixtureRequest, chat_server, workspace
    ) -> None:
        capabilities, _split = CHANNELS[channel]()
        if not {"photo", "file"} <= capabilities.media_in:
            pytest.skip(f"{channel} takes no photos or files in")
        assert channel in MEDIA, f"{channel} declares photos and files in, and has no driver (KitDrivers.media)"
        from tests.media_files import image_parts, jpeg_with_gps

        chat_server.enqueue('{"reply": "Seen. END"}', '{"reply": "Filed. END"}')
        MEDIA[channel](request, jpeg_with_gps(600, 400))
        photo_turn, file_turn = chat_server.chat_requests
        assert photo_turn["model"] == "vision-model" and len(image_parts(photo_turn)) == 1
        assert "image_url" not in json.dumps(file_turn) and "menu.pdf" in json.dumps(file_turn["messages"][-1])
        saved = [workspace.path(rel).read_bytes() for rel in workspace.list("inbox/**/*.pdf")]
        assert saved == [MENU]  # the file kept as sent


# -- a file out: the send_file skill's file arrives in the chat, once, as it is in the workspace ----------------

EXPENSES = b"date,amount\n2026-11-02,12.50\n"
SEND = json.dumps({"skill": "send_file", "args": {"path": "exports/expenses.csv", "caption": "November"}})


def _file_out_on_telegram(request: pytest.FixtureRequest) -> list[bytes]:
    from tests.telegram_harness import texts

    fake = request.getfixturevalue("fake")
    request.getfixturevalue("start_bot")()
    fake.send_message("send me the expenses")
    fake.wait_for(lambda: "Sent. END" in texts(fake), timeout=30)
    return [c["params"]["document"]["content"] for c in fake.calls("sendDocument") if c["status"] == 200]


def _file_out_on_signal(request: pytest.FixtureRequest) -> list[bytes]:
    from tests.signal_harness import OWNER, wait_for

    daemon = request.getfixturevalue("daemon")
    request.getfixturevalue("start")()
    daemon.message(OWNER, "send me the expenses")
    wait_for(lambda: any(s["message"] == "Sent. END" for s in daemon.sent_to(OWNER)), what="the reply", timeout=30)
    return [f["content"] for s in daemon.sent_to(OWNER) for f in s.get("files") or []]


def _file_out_on_the_terminal(request: pytest.FixtureRequest) -> list[bytes]:
    """The terminal is on the workspace's machine: the file is shown by its path, which must be the file."""
    from messaging_llm_bot.channels.console.chat import run_console
    from tests.telegram_harness import make_runtime

    workspace = request.getfixturevalue("workspace")
    config = {**request.getfixturevalue("bot_config"), "memory": {"enabled": False}}
    runtime = make_runtime(config, workspace, request.getfixturevalue("tmp_path"))
    out, err = io.StringIO(), io.StringIO()
    try:
        assert run_console(runtime, _Tty(["send me the expenses\n"]), out, err) == 0
    finally:
        runtime.shutdown(5)
    assert "Sent. END" in out.getvalue()
    shown = [line.removeprefix("📎 ").split(" (")[0] for line in err.getvalue().splitlines() if line.startswith("📎")]
    return [(Path(path) if os.path.isabs(path) else workspace.path(path)).read_bytes() for path in shown]


def _file_out_on_webchat(request: pytest.FixtureRequest) -> list[bytes]:
    """The page downloads a sent file from its message (``/chat/file/<id>``)."""
    chat = request.getfixturevalue("start_webchat")()
    chat.send("send me the expenses")
    chat.replies_until(lambda texts: "Sent. END" in texts)
    assert chat.client is not None
    files = [m for m in chat.history()["messages"] if m.get("file")]
    return [chat.client.get(f"/chat/file/{m['id']}").content for m in files]


def _file_out_on_whatsapp(request: pytest.FixtureRequest) -> list[bytes]:
    """The file is uploaded to the media endpoint and sent as a document by its media id."""
    from tests.whatsapp_harness import OWNER

    graph = request.getfixturevalue("whatsapp_graph")
    request.getfixturevalue("start_whatsapp")()
    graph.user_text(OWNER, "send me the expenses")
    _whatsapp_texts_until(request, lambda texts: "Sent. END" in texts)
    documents = [m["payload"]["document"] for m in graph.sent(OWNER) if m["type"] == "document"]
    assert [d.get("filename") for d in documents] == ["expenses.csv"]
    return [graph.media[d["id"]]["data"] for d in documents]


def _file_out_on_slack(request: pytest.FixtureRequest) -> list[bytes]:
    """The file is shared in the owner's DM by Slack's three upload steps."""
    from tests.slack_harness import OWNER, owner_writes

    slack = request.getfixturevalue("slack_api")
    request.getfixturevalue("start_slack")()
    owner_writes(slack, "send me the expenses")
    _slack_texts_until(request, lambda texts: "Sent. END" in texts)
    shared = slack.shared(slack.dms[OWNER])
    assert [(f["name"], f["comment"]) for f in shared] == [("expenses.csv", "November")]
    return [f["data"] for f in shared]


def _file_out_on_discord(request: pytest.FixtureRequest) -> list[bytes]:
    """The file is sent as an attachment in the owner's DM, the caption as its text."""
    from tests.discord_harness import OWNER, owner_writes

    discord = request.getfixturevalue("discord_api")
    request.getfixturevalue("start_discord")()
    owner_writes(discord, "send me the expenses")
    _discord_texts_until(request, lambda texts: "Sent. END" in texts)
    sent = [m for m in discord.posted(discord.dms[OWNER]) if m["attachments"]]
    assert [(m["content"], [name for name, _ in discord.attached(m)]) for m in sent] == [("November", ["expenses.csv"])]
    return [data for m in sent for _, data in discord.attached(m)]


FILE_OUT = {
    "discord": _file_out_on_discord,
    "slack": _file_out_on_slack,
    "whatsapp": _file_out_on_whatsapp,
    "telegram": _file_out_on_telegram,
    "signal": _file_out_on_signal,
    "console": _file_out_on_the_terminal,
    "webchat": _file_out_on_webchat,
}


#: Why a channel that declares files out has no driver here yet.
NO_FILE_OUT = {
    "email": "no driver in FILE_OUT yet "
    "(tests/test_email_channel.py::test_a_file_the_model_sends_arrives_attached_in_the_thread)",
    "matrix": "no driver in FILE_OUT yet "
    "(tests/test_matrix.py::test_the_send_file_skill_sends_a_workspace_file_into_the_room)",
}


class _FileOutCase:
    """A file out."""

    def test_a_file_out_arrives_once_as_it_is_in_the_workspace(
        self, channel: str, request: pytest.FixtureRequest, chat_server, workspace
    ) -> None:
        capabilities, _split = CHANNELS[channel]()
        if "file" not in capabilities.media_out:
            pytest.skip(f"{channel} sends no files")
        if channel in NO_FILE_OUT:
            pytest.skip(NO_FILE_OUT[channel])
        # Declared, the send_file skill offers to send files there: a channel that cannot is no skip.
        assert channel in FILE_OUT, f"{channel} declares files out, and has no driver (KitDrivers.file_out)"
        workspace.path("exports").mkdir()
        workspace.path("exports/expenses.csv").write_bytes(EXPENSES)
        chat_server.enqueue(SEND, '{"reply": "Sent. END"}')
        assert FILE_OUT[channel](request) == [EXPENSES]
        asked = [str(r["messages"][-1])[:300] for r in chat_server.chat_requests]  # what each request ended with
        assert len(asked) == 2, asked  # the call, then the answer after it


# -- a restart mid-turn: the message is answered once, by the next start ------------------------------------


def _slow_turns(config: dict[str, typing.Any]) -> None:
    """The turn outlives the stop: the model answers in 20 s (the case's reply), the stop waits 0.1 s for it."""
    config.setdefault("runtime", {})["shutdown_timeout_seconds"] = 0.1
    config["llm"]["runners"][0]["timeout_seconds"] = 30


def restart_around(
    request: pytest.FixtureRequest,
    start_fixture: str,
    say: Callable[[str], object],
    seen: Callable[[], list[str]],
    seen_until: Callable[[Callable[[list[str]], bool]], list[str]],
    patch_key: str = "patch",
) -> tuple[list[str], list[str]]:
    """The restart case on a channel, given how the owner writes (``say``) and what the chat shows (``seen``, and
    ``seen_until`` a condition holds): a slow turn started, the bot stopped mid-turn, the next start answers it.
    (what the chat saw before the restart, what it saw after the next start answered)."""
    chat_server, start = request.getfixturevalue("chat_server"), request.getfixturevalue(start_fixture)
    bot = start(**{patch_key: _slow_turns})
    say("very slow question")
    assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")
    bot.stop(timeout=20)
    before = seen()
    chat_server.reset()
    chat_server.enqueue('{"reply": "answered now"}')
    start(**{patch_key: _slow_turns})
    return before, seen_until(lambda texts: "answered now" in texts)


def _restart_on_telegram(request: pytest.FixtureRequest) -> tuple[list[str], list[str]]:
    from tests.telegram_harness import texts

    fake = request.getfixturevalue("fake")

    def seen_until(done: Callable[[list[str]], bool]) -> list[str]:
        fake.wait_for(lambda: done(texts(fake)), timeout=30)
        return texts(fake)

    return restart_around(request, "start_bot", fake.send_message, lambda: texts(fake), seen_until, "config_patch")


def _restart_on_signal(request: pytest.FixtureRequest) -> tuple[list[str], list[str]]:
    from tests.signal_harness import OWNER, wait_for

    daemon = request.getfixturevalue("daemon")

    def seen() -> list[str]:
        return [s["message"] for s in daemon.sent_to(OWNER)]

    def seen_until(done: Callable[[list[str]], bool]) -> list[str]:
        wait_for(lambda: done(seen()), what="the answer after the restart", timeout=30)
        return seen()

    return restart_around(request, "start", lambda text: daemon.message(OWNER, text), seen, seen_until)


def _restart_on_the_terminal(request: pytest.FixtureRequest) -> tuple[list[str], list[str]]:
    """The terminal chat stopped by SIGTERM while the model works (its own process: a signal ends it), then
    started again with nothing typed: it answers the message left first."""
    from messaging_llm_bot.channels.console.chat import run_console
    from tests.telegram_harness import make_runtime

    chat_server, workspace = request.getfixturevalue("chat_server"), request.getfixturevalue("workspace")
    config = {**request.getfixturevalue("bot_config"), "memory": {"enabled": False}}
    _slow_turns(config)
    config_file = request.getfixturevalue("tmp_path") / "config.json"
    config_file.write_text(json.dumps(config))
    args = ["--frontend", "console", "--config", str(config_file), "--workspace", str(workspace.root)]
    env = {k: v for k, v in os.environ.items() if k != "TELEGRAM_BOT_TOKEN"}
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with preload.popen([sys.executable, "-m", "messaging_llm_bot", *args], text=True, env=env, **pipes) as proc:
        try:
            assert proc.stdin is not None
            proc.stdin.write("very slow question\n")
            proc.stdin.flush()
            assert chat_server.wait_for_requests(1, timeout=20, path="/chat/completions")
            proc.send_signal(signal.SIGTERM)
            before, _ = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
    chat_server.reset()
    chat_server.enqueue('{"reply": "answered now"}')
    runtime = make_runtime(config, workspace, request.getfixturevalue("tmp_path"))
    after = io.StringIO()
    try:
        assert run_console(runtime, io.StringIO(""), after, io.StringIO()) == 0
    finally:
        runtime.shutdown(5)
    return [before], after.getvalue().split("\n\n")


def _restart_on_email(request: pytest.FixtureRequest) -> tuple[list[str], list[str]]:
    from tests.email_harness import body, mail
    from tests.waiting import wait_until

    imap, smtp = request.getfixturevalue("email_imap"), request.getfixturevalue("email_smtp")
    chat_server, start = request.getfixturevalue("chat_server"), request.getfixturevalue("start_email")
    bot = start(patch=_slow_turns)
    imap.append("INBOX", mail("very slow question", message_id="<slow@example.org>"))
    assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")
    bot.stop(timeout=20)
    before = [body(m).strip() for m in smtp.messages]
    chat_server.reset()
    chat_server.enqueue('{"reply": "answered now"}')
    start(patch=_slow_turns)
    wait_until(lambda: smtp.messages, 30, "the answer after the restart")
    return before, [body(m).strip() for m in smtp.messages]


def _restart_on_matrix(request: pytest.FixtureRequest) -> tuple[list[str], list[str]]:
    chat_server = request.getfixturevalue("chat_server")
    world, room = _matrix_room(request, patch=_slow_turns)
    world.owner.send(room, "very slow question")
    assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")
    request.getfixturevalue("start_matrix").running[-1].stop(timeout=20)
    before = world.owner.texts(room, world.bot.user_id)
    chat_server.reset()
    chat_server.enqueue('{"reply": "answered now"}')
    request.getfixturevalue("start_matrix")(patch=_slow_turns)
    return before, _bot_texts_until(world, room, lambda texts: "answered now" in texts)


def _restart_on_webchat(request: pytest.FixtureRequest) -> tuple[list[str], list[str]]:
    chat_server = request.getfixturevalue("chat_server")
    start = request.getfixturevalue("start_webchat")
    chat = start(patch=_slow_turns)
    chat.send("very slow question")
    assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")
    before = chat.replies()
    chat.stop(timeout=20)
    chat_server.reset()
    chat_server.enqueue('{"reply": "answered now"}')
    return before, start(patch=_slow_turns).replies_until(lambda texts: "answered now" in texts)


def _restart_on_whatsapp(request: pytest.FixtureRequest) -> tuple[list[str], list[str]]:
    from tests.whatsapp_harness import OWNER

    graph = request.getfixturevalue("whatsapp_graph")
    return restart_around(
        request,
        "start_whatsapp",
        lambda text: graph.user_text(OWNER, text),
        lambda: graph.texts(OWNER),
        lambda done: _whatsapp_texts_until(request, done),
    )


def _restart_on_slack(request: pytest.FixtureRequest) -> tuple[list[str], list[str]]:
    from tests.slack_harness import owner_texts, owner_writes

    slack = request.getfixturevalue("slack_api")
    return restart_around(
        request,
        "start_slack",
        lambda text: owner_writes(slack, text),
        lambda: owner_texts(slack),
        lambda done: _slack_texts_until(request, done),
    )


def _restart_on_discord(request: pytest.FixtureRequest) -> tuple[list[str], list[str]]:
    from tests.discord_harness import owner_texts, owner_writes

    discord = request.getfixturevalue("discord_api")
    return restart_around(
        request,
        "start_discord",
        lambda text: owner_writes(discord, text),
        lambda: owner_texts(discord),
        lambda done: _discord_texts_until(request, done),
    )


RESTART = {
    "discord": _restart_on_discord,
    "slack": _restart_on_slack,
    "whatsapp": _restart_on_whatsapp,
    "webchat": _restart_on_webchat,
    "telegram": _restart_on_telegram,
    "signal": _restart_on_signal,
    "email": _restart_on_email,
    "console": _restart_on_the_terminal,
    "matrix": _restart_on_matrix,
}


class _RestartCase:
    """A restart mid-turn."""

    @pytest.mark.subprocess  # the terminal chat is stopped by a signal in a process of its own
    def test_a_restart_mid_turn_leaves_the_message_to_the_next_start_which_answers_it_once(
        self, channel: str, request: pytest.FixtureRequest, chat_server, workspace
    ) -> None:
        from assistant_framework.inbox import Inbox
        from tests.waiting import wait_until

        chat_server.enqueue({"content": json.dumps({"reply": "too late"}), "delay": 20})
        before, after = RESTART[channel](request)
        assert not [text for text in before if "too late" in text]
        assert [text for text in after if "answered now" in text] == ["answered now"]
        assert len(chat_server.chat_requests) == 1  # asked once more, by the next start
        wait_until(lambda: not Inbox(workspace).pending(), what="the item completed after the reply")


# -- busy modes: a message the same person sends while the model works on their last one ----------------------
#
# steer (the default): it is in the next model request of the same turn and one reply answers both; interrupt:
# the request in flight is hung up and one turn answers both at once; queue: two turns in order
# (conversation/busy.py). The fake model holds the first request until the test releases it (tests/held_model.py).

FIRST, SECOND = "first: book the table for Anna", "no, the other Anna"


@dataclasses.dataclass
class BusyChat:
    """One chat of a channel under test: send a message, how many joined the running turn, the bot's messages
    (and the lines shown beside them: the terminal's stderr)."""

    send: Callable[[str], None]
    joined: Callable[[], int]
    replies: Callable[[], list[str]]
    waiting: Callable[[], bool]  # the second message waits its turn (stored, or read and held)
    notes: Callable[[], list[str]] = lambda: []


def busy_mode(mode: str) -> Callable[[dict[str, typing.Any]], None]:
    def patch(config: dict[str, typing.Any]) -> None:
        config.setdefault("runtime", {})["busy_mode"] = mode

    return patch


def two_stored(request: pytest.FixtureRequest) -> Callable[[], bool]:
    from assistant_framework.inbox import Inbox

    workspace = request.getfixturevalue("workspace")
    return lambda: len(Inbox(workspace).pending()) == 2


def _busy_on_telegram(request: pytest.FixtureRequest, mode: str) -> BusyChat:
    from tests.telegram_harness import OWNER, texts

    fake = request.getfixturevalue("fake")
    bot = request.getfixturevalue("start_bot")(config_patch=busy_mode(mode))
    busy = bot.service.turns.busy
    return BusyChat(
        lambda text: fake.send_message(text),
        lambda: busy.joined(f"tg:{OWNER}"),
        lambda: texts(fake),
        two_stored(request),
    )


def _busy_on_signal(request: pytest.FixtureRequest, mode: str) -> BusyChat:
    from tests.signal_harness import OWNER

    daemon = request.getfixturevalue("daemon")
    busy = request.getfixturevalue("start")(patch=busy_mode(mode)).service.turns.busy
    return BusyChat(
        lambda text: daemon.message(OWNER, text),
        lambda: busy.joined(f"sig:{OWNER}"),
        lambda: [s["message"] for s in daemon.sent_to(OWNER)],
        two_stored(request),
    )


def _busy_on_webchat(request: pytest.FixtureRequest, mode: str) -> BusyChat:
    from messaging_llm_bot.channels.webchat.format import CONVERSATION

    chat = request.getfixturevalue("start_webchat")(patch=busy_mode(mode))
    return BusyChat(chat.send, lambda: chat.service.turns.busy.joined(CONVERSATION), chat.replies, two_stored(request))


def _busy_on_matrix(request: pytest.FixtureRequest, mode: str) -> BusyChat:
    from messaging_llm_bot.channels.matrix.settings import conversation_of

    world, room = _matrix_room(request, patch=busy_mode(mode))
    busy = request.getfixturevalue("start_matrix").running[-1].service.turns.busy
    return BusyChat(
        lambda text: world.owner.send(room, text),
        lambda: busy.joined(conversation_of(room)),
        lambda: list(world.owner.texts(room, world.bot.user_id)),
        two_stored(request),
    )


def _busy_on_email(request: pytest.FixtureRequest, mode: str) -> BusyChat:
    """The second mail is the owner's reply to their first (the same thread), taken at the next look."""
    from messaging_llm_bot.channels.email.mailitem import conversation_of
    from messaging_llm_bot.channels.email.message import parse
    from tests.email_harness import body, mail

    imap, smtp = request.getfixturevalue("email_imap"), request.getfixturevalue("email_smtp")
    bot = request.getfixturevalue("start_email")(patch=busy_mode(mode))
    first = "<busy-1@example.org>"
    thread = conversation_of(parse(mail(FIRST, message_id=first)))
    sent: list[str] = []

    def send(text: str) -> None:
        headers = {"In-Reply-To": first, "References": first} if sent else {}
        sent.append(text)
        imap.append("INBOX", mail(text, message_id=f"<busy-{len(sent)}@example.org>", headers=headers))

    def joined() -> int:
        turns = bot.service._turns
        return turns.busy.joined(thread) if turns is not None else 0

    return BusyChat(send, joined, lambda: [body(m).strip() for m in smtp.messages], two_stored(request))


def _busy_on_the_terminal(request: pytest.FixtureRequest, mode: str) -> BusyChat:
    """The interactive terminal chat in a thread of the test, typed into while it answers."""
    import threading

    from messaging_llm_bot.channels.console.chat import run_console
    from messaging_llm_bot.conversation.line_chat import JOINED_TEXT
    from tests.console_harness import TypedTty
    from tests.telegram_harness import make_runtime

    config = {**request.getfixturevalue("bot_config"), "memory": {"enabled": False}}
    # Not streamed: a terminal cannot take back what it printed, so the answer the model was writing when the
    # line joined stays on the screen above the final one (docs/conversation.md); the case counts answers.
    config["llm"] = {**config["llm"], "stream": False}
    busy_mode(mode)(config)
    runtime = make_runtime(config, request.getfixturevalue("workspace"), request.getfixturevalue("tmp_path"))
    tty, out, err = TypedTty(), io.StringIO(), io.StringIO()
    chat = threading.Thread(target=run_console, args=(runtime, tty, out, err), name="terminal-chat", daemon=True)
    chat.start()

    def end() -> None:
        tty.close()
        chat.join(30)
        tty.close_reader()
        runtime.shutdown(5)

    request.addfinalizer(end)
    return BusyChat(
        tty.type,
        lambda: err.getvalue().count(JOINED_TEXT),
        lambda: [line.removeprefix("you> ").strip() for line in out.getvalue().splitlines()],
        two_stored(request),
        lambda: err.getvalue().splitlines(),
    )


def _busy_on_whatsapp(request: pytest.FixtureRequest, mode: str) -> BusyChat:
    from tests.whatsapp_harness import OWNER

    graph = request.getfixturevalue("whatsapp_graph")
    busy = request.getfixturevalue("start_whatsapp")(patch=busy_mode(mode)).service.turns.busy
    return BusyChat(
        lambda text: graph.user_text(OWNER, text),
        lambda: busy.joined(f"wa:{OWNER}"),
        lambda: graph.texts(OWNER),
        two_stored(request),
    )


def _busy_on_slack(request: pytest.FixtureRequest, mode: str) -> BusyChat:
    from tests.slack_harness import OWNER, owner_texts, owner_writes

    slack = request.getfixturevalue("slack_api")
    busy = request.getfixturevalue("start_slack")(patch=busy_mode(mode)).service.turns.busy
    dm = slack.add_user(OWNER)
    return BusyChat(
        lambda text: owner_writes(slack, text),
        lambda: busy.joined(f"sl:{dm}"),
        lambda: owner_texts(slack),
        two_stored(request),
    )


def _commands_on_slack(request: pytest.FixtureRequest, mode: str) -> BusyChat:
    """The owner's DM, a ``/command`` typed there sent as Slack sends a registered one: a signed slash command."""
    from tests.slack_harness import OWNER, owner_writes

    chat = _busy_on_slack(request, mode)
    slack = request.getfixturevalue("slack_api")

    def send(text: str) -> None:
        if not text.startswith("/"):
            owner_writes(slack, text)
            return
        answer = slack.deliver_command(slack.slash(OWNER, text))
        assert (answer.status_code, answer.text) == (200, "")  # acknowledged; the answer is a message in the DM

    return dataclasses.replace(chat, send=send)


def _busy_on_discord(request: pytest.FixtureRequest, mode: str) -> BusyChat:
    from tests.discord_harness import OWNER, owner_texts, owner_writes

    discord = request.getfixturevalue("discord_api")
    busy = request.getfixturevalue("start_discord")(patch=busy_mode(mode)).service.turns.busy
    dm = discord.add_user(OWNER)
    return BusyChat(
        lambda text: owner_writes(discord, text),
        lambda: busy.joined(f"dc:{dm}"),
        lambda: owner_texts(discord),
        two_stored(request),
    )


BUSY: dict[str, Callable[[pytest.FixtureRequest, str], BusyChat]] = {
    "discord": _busy_on_discord,
    "slack": _busy_on_slack,
    "whatsapp": _busy_on_whatsapp,
    "console": _busy_on_the_terminal,
    "email": _busy_on_email,
    "matrix": _busy_on_matrix,
    "webchat": _busy_on_webchat,
    "telegram": _busy_on_telegram,
    "signal": _busy_on_signal,
}


class _BusyCase:
    """A message sent while the model works."""

    @pytest.mark.parametrize("mode", ["steer", "interrupt", "queue"])
    def test_a_message_sent_while_the_model_works_follows_the_busy_mode(
        self, channel: str, mode: str, request: pytest.FixtureRequest, chat_server, workspace
    ) -> None:
        from assistant_framework.inbox import Inbox
        from tests.held_model import HeldModel, user_texts
        from tests.waiting import wait_until

        if channel not in BUSY:
            pytest.skip(f"{channel} has no busy-mode driver in this kit yet (add one to BUSY)")
        model = HeldModel(chat_server)
        try:
            chat = BUSY[channel](request, mode)
            chat.send(FIRST)
            assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")
            chat.send(SECOND)
            if mode == "queue":
                wait_until(chat.waiting, 15, "the second message to wait its turn")
                assert chat.joined() == 0
                model.release.set()
            elif mode == "steer":  # held until released: the turn runs, so the join is seen
                wait_until(lambda: chat.joined() == 1, 15, "the second message to join the running turn")
                model.release.set()
            # interrupt hangs up the held request and the turn goes on at once: its reply is the proof
            expected = (
                ["answer to the first only", f"answer to: {SECOND}"]
                if mode == "queue"
                else [f"answer to: {FIRST} + {SECOND}"]
            )
            wait_until(
                lambda: [r for r in chat.replies() if "answer to" in r] == expected, 30, f"the replies {expected}"
            )
        finally:
            model.release.set()
        requests = chat_server.chat_requests
        assert len(requests) == 2  # steer and interrupt: no second turn; queue: one turn each
        if mode == "queue":
            assert SECOND not in str(requests[0]["messages"]) and SECOND in user_texts(requests[1])[-1]
        else:
            turn = user_texts(requests[1])
            assert FIRST in turn[0] and turn[-1].strip() == SECOND  # the same turn, the new message last
        wait_until(lambda: not Inbox(workspace).pending(), 15, "both messages completed")
        assert [r for r in chat.replies() if "answer to" in r] == expected  # and nothing more came


# -- a scheduled job: its run answered once in the owner's chat -----------------------------------------------


def _jobs_on_matrix(request: pytest.FixtureRequest) -> Chat:
    """The owner's direct room known from before this start (the state file), as after their first message."""
    from messaging_llm_bot.channels.matrix.state import StateFile
    from tests.waiting import wait_until

    world, workspace = _matrix_world(request), request.getfixturevalue("workspace")
    room = world.direct_room()
    world.bot.join(room)  # joined in an earlier run: a send before this run's first sync joined it was refused
    StateFile(workspace).update(owner_room=room)
    request.getfixturevalue("start_matrix")()
    wait_until(lambda: world.joined(room), timeout=20, what="the bot to join the owner's direct room")
    return Chat(lambda text: world.owner.send(room, text), lambda: list(world.owner.texts(room, world.bot.user_id)))


def _jobs_on_whatsapp(request: pytest.FixtureRequest) -> Chat:
    """The owner has not written (the 24-hour window is closed): the run goes out as the template."""
    from tests.whatsapp_harness import OWNER, TEMPLATE

    graph = request.getfixturevalue("whatsapp_graph")
    request.getfixturevalue("start_whatsapp")(
        patch=lambda config: config["whatsapp"].update(template={"name": TEMPLATE})
    )

    def shown() -> list[str]:
        parameters = [
            m["payload"]["template"]["components"][0]["parameters"]
            for m in graph.sent(OWNER)
            if m["type"] == "template"
        ]
        return [*graph.texts(OWNER), *(one[0]["text"] for one in parameters)]

    return Chat(lambda text: graph.user_text(OWNER, text), shown)


def _owner_chat_of_busy(channel: str) -> Callable[[pytest.FixtureRequest], Chat]:
    def chat(request: pytest.FixtureRequest) -> Chat:
        busy = BUSY[channel](request, "steer")
        return Chat(busy.send, busy.replies)

    return chat


#: The owner's chat on a started channel for the job case, where its busy driver's is not it.
JOB_CHATS: dict[str, Callable[[pytest.FixtureRequest], Chat]] = {
    "matrix": _jobs_on_matrix,
    "whatsapp": _jobs_on_whatsapp,
}


class _JobCase:
    """A job run."""

    def test_a_job_made_without_a_chat_runs_once_in_the_owners_chat(
        self, channel: str, request: pytest.FixtureRequest, chat_server, workspace
    ) -> None:
        """A job due when the channel starts, made without a chat (by hand, by the CLI): the one scheduler hands
        its run to the home channel, the only one configured here, which answers it in the owner's chat through
        its inbox (``ChannelJobs.start``: ``ChannelIntake.start_job``), once."""
        from datetime import datetime, timedelta, timezone

        from assistant_framework.inbox import Inbox
        from assistant_framework.jobs import JOBS_FILE, RUNS_FILE
        from tests.waiting import wait_until

        made = (datetime.now(timezone.utc) - timedelta(minutes=60, seconds=10)).isoformat(timespec="seconds")
        job = {"id": "kitjob", "name": "kitjob", "every_minutes": 60, "created_at": made, "message": "Water the plants"}
        workspace.write_json(JOBS_FILE, [job])
        chat = JOB_CHATS.get(channel, _owner_chat_of_busy(channel))(request)  # the channel started
        wait_until(lambda: any("Water the plants" in text for text in chat.replies()), 30, "the job's run")

        def outcomes() -> list[object]:
            return [line.get("outcome") for line in workspace.read_jsonl(RUNS_FILE)]

        wait_until(lambda: outcomes() == ["delivered"], 15, "the run's line")
        wait_until(lambda: not Inbox(workspace).pending(), 15, "the run's item completed")
        assert sum("Water the plants" in text for text in chat.replies()) == 1
        assert not chat_server.chat_requests  # a message job is no model call


# -- what a channel sends unasked: a reminder to the chat it was set in, a collector's notice to the owner --------

GUEST_TG, GUEST_SIG = 2, "+15551110002"  # an allowed user who is not the owner (signal_harness.FRIEND)


def just_due() -> typing.Any:
    from datetime import datetime, timedelta, timezone

    return datetime.now(timezone.utc) - timedelta(seconds=5)  # due, not late (a late one says so)


def _notices_on_telegram(request: pytest.FixtureRequest) -> dict[str, list[str]]:
    from assistant_framework.stores.reminders import ReminderStore
    from tests.telegram_harness import OWNER, texts

    fake, workspace = request.getfixturevalue("fake"), request.getfixturevalue("workspace")
    ReminderStore(workspace).add(GUEST_TG, "water the plants", just_due(), "Europe/Berlin")
    bot = request.getfixturevalue("start_bot")(allowed_user_ids=[OWNER, GUEST_TG])
    fake.wait_for(lambda: texts(fake, GUEST_TG), timeout=20)
    bot.service.notices.notify_from_thread("rss", "3 new items")  # from a collector's thread
    fake.wait_for(lambda: texts(fake, OWNER))
    fake.wait_for(lambda: all(r["status"] == "delivered" for r in ReminderStore(workspace).list()))
    return {"owner": texts(fake, OWNER), "guest": texts(fake, GUEST_TG)}


def _notices_on_signal(request: pytest.FixtureRequest) -> dict[str, list[str]]:
    from assistant_framework.stores.reminders import ReminderStore
    from tests.signal_harness import OWNER
    from tests.waiting import wait_until

    daemon, workspace = request.getfixturevalue("daemon"), request.getfixturevalue("workspace")
    ReminderStore(workspace).add(f"sig:{GUEST_SIG}", "water the plants", just_due(), "Europe/Berlin")
    bot = request.getfixturevalue("start")()
    daemon.wait_sent(1, timeout=20)
    bot.service.notices.notify_from_thread("rss", "3 new items")
    daemon.wait_sent(2)
    wait_until(lambda: all(r["status"] == "delivered" for r in ReminderStore(workspace).list()))
    return {who: [s["message"] for s in daemon.sent_to(chat)] for who, chat in (("owner", OWNER), ("guest", GUEST_SIG))}


def _notices_on_whatsapp(request: pytest.FixtureRequest) -> dict[str, list[str]]:
    """Neither has written (the window is closed): both go out as the template, the text its parameter."""
    from assistant_framework.stores.reminders import ReminderStore
    from tests.waiting import wait_until
    from tests.whatsapp_harness import OWNER, TEMPLATE

    graph, workspace = request.getfixturevalue("whatsapp_graph"), request.getfixturevalue("workspace")
    guest = GUEST_SIG.lstrip("+")
    ReminderStore(workspace).add(f"wa:{guest}", "water the plants", just_due(), "Europe/Berlin")

    def patch(config: dict[str, typing.Any]) -> None:
        config["whatsapp"].update(allowed=[f"+{OWNER}", GUEST_SIG], template={"name": TEMPLATE})

    bot = request.getfixturevalue("start_whatsapp")(patch=patch)
    wait_until(lambda: graph.sent(guest), 20, "the reminder")
    bot.service.notify_from_thread("rss", "3 new items")  # from a collector's thread
    wait_until(lambda: graph.sent(OWNER), 20, "the notice")
    wait_until(lambda: all(r["status"] == "delivered" for r in ReminderStore(workspace).list()))

    def shown(number: str) -> list[str]:
        return [m["payload"]["template"]["components"][0]["parameters"][0]["text"] for m in graph.sent(number)]

    return {"owner": shown(OWNER), "guest": shown(guest)}


def _notices_on_slack(request: pytest.FixtureRequest) -> dict[str, list[str]]:
    """The reminder to the guest's DM it was set in, the notice to the owner's DM (opened at start)."""
    from assistant_framework.stores.reminders import ReminderStore
    from tests.slack_harness import OWNER
    from tests.waiting import wait_until

    slack, workspace = request.getfixturevalue("slack_api"), request.getfixturevalue("workspace")
    guest = "U0GUEST001"
    guest_dm = slack.add_user(guest)
    ReminderStore(workspace).add(f"sl:{guest_dm}", "water the plants", just_due(), "Europe/Berlin")
    bot = request.getfixturevalue("start_slack")(patch=lambda config: config["slack"].update(allowed=[OWNER, guest]))
    wait_until(lambda: slack.posted(guest_dm), 20, "the reminder")
    bot.service.notify_from_thread("rss", "3 new items")  # from a collector's thread
    wait_until(lambda: slack.posted(slack.dms[OWNER]), 20, "the notice")
    wait_until(lambda: all(r["status"] == "delivered" for r in ReminderStore(workspace).list()))
    return {
        "owner": [m["text"] for m in slack.posted(slack.dms[OWNER])],
        "guest": [m["text"] for m in slack.posted(guest_dm)],
    }


def _notices_on_matrix(request: pytest.FixtureRequest) -> dict[str, list[str]]:
    """The reminder to the friend's direct room it was set in, the notice to the owner's direct room (known from
    the owner's earlier message: in the state file before this start)."""
    from assistant_framework.stores.reminders import ReminderStore
    from messaging_llm_bot.channels.matrix.state import StateFile
    from tests.waiting import wait_until

    world, workspace = _matrix_world(request), request.getfixturevalue("workspace")
    owner_room = world.direct_room()
    guest_room = world.friend.create_room([world.bot.user_id], direct=True)
    StateFile(workspace).update(owner_room=owner_room)
    bot = request.getfixturevalue("start_matrix")()
    bot_id = world.bot.user_id
    wait_until(lambda: world.joined(owner_room), 20, "the bot to join the owner's direct room")
    wait_until(lambda: world.friend.members(guest_room).get(bot_id) == "join", 20, "the bot to join the friend's room")
    ReminderStore(workspace).add(f"mx:{guest_room}", "water the plants", just_due(), "Europe/Berlin")
    wait_until(lambda: world.friend.texts(guest_room, bot_id), 20, "the reminder")
    bot.service.notices.notify_from_thread("rss", "3 new items")  # from a collector's thread
    wait_until(lambda: world.owner.texts(owner_room, bot_id), 20, "the notice")
    wait_until(lambda: all(r["status"] == "delivered" for r in ReminderStore(workspace).list()))
    return {"owner": world.owner.texts(owner_room, bot_id), "guest": world.friend.texts(guest_room, bot_id)}


def _notices_on_discord(request: pytest.FixtureRequest) -> dict[str, list[str]]:
    """The reminder to the guest's DM it was set in, the notice to the owner's DM (opened at start)."""
    from assistant_framework.stores.reminders import ReminderStore
    from tests.discord_harness import OWNER
    from tests.waiting import wait_until

    discord, workspace = request.getfixturevalue("discord_api"), request.getfixturevalue("workspace")
    guest = "80351110224678999"
    guest_dm = discord.add_user(guest)
    ReminderStore(workspace).add(f"dc:{guest_dm}", "water the plants", just_due(), "Europe/Berlin")

    def allow_both(config: dict) -> None:
        config["discord"].update(allowed=[OWNER, guest])

    bot = request.getfixturevalue("start_discord")(patch=allow_both)
    wait_until(lambda: discord.posted(guest_dm), 20, "the reminder")
    bot.service.notify_from_thread("rss", "3 new items")  # from a collector's thread
    wait_until(lambda: discord.posted(discord.dms[OWNER]), 20, "the notice")
    wait_until(lambda: all(r["status"] == "delivered" for r in ReminderStore(workspace).list()))
    return {
        "owner": [m["content"] for m in discord.posted(discord.dms[OWNER])],
        "guest": [m["content"] for m in discord.posted(guest_dm)],
    }


NOTICES = {
    "discord": _notices_on_discord,
    "telegram": _notices_on_telegram,
    "matrix": _notices_on_matrix,
    "signal": _notices_on_signal,
    "whatsapp": _notices_on_whatsapp,
    "slack": _notices_on_slack,
}
#: Why a channel has no driver here (its own tests cover its reminders and notices).
NO_NOTICES = {
    "console": "the terminal's one user is the owner: a reminder is printed between the lines "
    "(tests/test_console_tty.py::test_console_reminders_deliver_only_this_chats_due_reminders)",
    "email": "no driver in NOTICES yet "
    "(tests/test_email_channel.py::test_a_reminder_set_in_a_mail_thread_is_mailed_to_its_sender)",
    "webchat": "the page's one user is the owner (tests/test_webchat_jobs.py: its reminders and notices)",
}


class _NoticesCase:
    """What a channel sends unasked."""

    def test_a_reminder_reaches_its_own_chat_and_a_notice_only_the_owner(
        self, channel: str, request: pytest.FixtureRequest, chat_server
    ) -> None:
        if channel not in NOTICES:
            pytest.skip(NO_NOTICES[channel])
        sent = NOTICES[channel](request)
        assert sent == {"owner": ["📬 rss: 3 new items"], "guest": ["⏰ water the plants"]}
        assert not chat_server.chat_requests  # neither is a turn


# -- commands typed as messages: /help answered with the shared text by no model; /stop ends the running turn ---------
#
# Through each channel's real path (conversation/intake.py ``ChannelIntake.command``; the owner's own chats: their
# services). A channel's chat is its busy-mode driver's (BUSY: one chat, its sends and what it shows); /stop's case
# holds the model's answer as that case does (tests/held_model.py).

#: The channels that take commands typed as messages: their drivers (BUSY's, called with the default busy mode).
COMMAND_CHATS = {
    name: BUSY[name] for name in ("discord", "whatsapp", "console", "matrix", "webchat", "telegram", "signal")
} | {"slack": _commands_on_slack}
#: Why a channel takes no commands.
NO_COMMANDS = {
    "email": "no commands by mail (docs/email.md): a mail's words are a message for the model",
}
#: What a channel answers to /stop while a turn runs: the shared text (conversation/commands.py), on the terminal
#: its note on stderr (a line typed while it answers is read by its main thread: channels/console/chat.py).
STOP_ANSWERS = {"console": "… stopping"}


def _help_lines() -> list[str]:
    """The shared /help's command list for the owner in their own chat (conversation/commands.py), without spaces
    (a channel may wrap a line)."""
    from messaging_llm_bot.conversation.commands import help_text

    return [_words(line) for line in help_text([]).split("Commands:\n", 1)[1].splitlines()]


class _CommandCase:
    """Commands typed as messages."""

    def test_a_typed_help_gets_the_shared_answer_and_reaches_no_model(
        self, channel: str, request: pytest.FixtureRequest, chat_server
    ) -> None:
        from tests.waiting import wait_until

        if channel not in COMMAND_CHATS:
            pytest.skip(NO_COMMANDS[channel])
        chat = COMMAND_CHATS[channel](request, "steer")
        chat.send("/help")
        lines = _help_lines()
        wait_until(lambda: all(line in _words("".join(chat.replies())) for line in lines), 30, "the answer to /help")
        assert sum("/stop" in reply for reply in chat.replies()) == 1  # answered once
        chat_server.enqueue('{"reply": "pong END"}')
        chat.send("ping")  # after /help: a model that saw it would see it by now
        wait_until(lambda: "pong END" in chat.replies(), 30, "the answer to ping")
        [turn] = chat_server.chat_requests
        assert "/help" not in json.dumps(turn["messages"])  # nor is it in the conversation's history

    def test_stop_while_a_turn_runs_ends_it_at_once_and_is_answered(
        self, channel: str, request: pytest.FixtureRequest, chat_server, workspace
    ) -> None:
        from assistant_framework.inbox import Inbox
        from tests.held_model import HeldModel
        from tests.waiting import wait_until

        if channel not in COMMAND_CHATS:
            pytest.skip(NO_COMMANDS[channel])
        model = HeldModel(chat_server)
        stopping = STOP_ANSWERS.get(channel, STOPPING_TEXT)
        chat = COMMAND_CHATS[channel](request, "steer")

        def shown() -> list[str]:
            return chat.replies() + chat.notes()

        try:
            chat.send(FIRST)
            assert chat_server.wait_for_requests(1, timeout=15, path="/chat/completions")
            chat.send("/stop")
            # Until the turn's stop is shown, or the held answer given (the stop missed the turn).
            wait_until(lambda: any("⏹ Stopped." in t for t in shown()) or model.held_answered.is_set(), 30, "the stop")
            assert not model.held_answered.is_set(), shown()  # the turn ended while the model held its answer
            wait_until(lambda: any(stopping in t for t in shown()), 15, "the answer to /stop")
        finally:
            model.release.set()
        wait_until(lambda: not Inbox(workspace).pending(), 15, "the stopped message completed")
        assert not [t for t in shown() if "answer to the first only" in t or NOTHING_TO_STOP_TEXT in t]
        assert len(chat_server.chat_requests) == 1  # no round after the stop


# -- a channel's drivers in a file of its own -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class KitDrivers:
    """One channel's drivers of the kit's cases, declared in ``tests/kit_<name>.py`` (found by the registry's
    name, conversation/routes.py) and given to ``register``: a new channel adds no line to this file. A case
    without a driver names why in ``skips`` (the table's name: "STRANGERS", "NOTICES", "GUESTS", ...).

    Each driver starts the channel through its fixtures (``request.getfixturevalue``), has people write through
    the channel's fake, and gives back what they see, as the user reads it (Markdown's markers rendered away):
    the built-in channels' drivers above are the examples, and the helpers they share are public here
    (``restart_around``, ``streaming``, ``busy_mode``, ``two_stored``, ``with_vision``, ``pairing_off``,
    ``just_due``)."""

    #: The channel's declared ``Capabilities`` and its own splitter of a reply: Markdown in, the parts as the user
    #: reads them out (the contract's split test and the long reply hold them to the declared limit and unit).
    capabilities: Callable[[], tuple[Capabilities, Callable[[str], list[str]]]]
    #: The owner writes "delete notes/important.md", then answers the question yes (True) or no: (the question's
    #: text, the reply after the answer).
    approve: Callable[[pytest.FixtureRequest, bool], tuple[str, str]]
    #: The owner writes each line: the bot's messages in their chat once "END" is in them.
    chat: Callable[[pytest.FixtureRequest, list[str]], list[str]]
    #: The owner writes with the answer streamed (``streaming``; an editing channel sets ``Shown.texts``):
    #: (how many edits showed the answer before its end, the bot's messages at the end).
    stream: Callable[[pytest.FixtureRequest, Shown], tuple[int, list[str]]]
    #: A slow turn stopped mid-way and the channel started again (``restart_around``): (before, after).
    restart: Callable[[pytest.FixtureRequest], tuple[list[str], list[str]]]
    #: The channel started with the busy mode: the owner's chat (``BusyChat``; the COMMANDS case's chat too).
    busy: Callable[[pytest.FixtureRequest, str], BusyChat]
    #: A stranger writes three times, then the owner "ping": how often the stranger was told.
    strangers: Callable[[pytest.FixtureRequest], int] | None = None
    #: The same with pairing off (``pairing_off``): how often the stranger was told their id.
    told_their_id: Callable[[pytest.FixtureRequest], int] | None = None
    #: The owner sends the photo, then the file MENU (with ``with_vision``), each once its reply came.
    media: Callable[[pytest.FixtureRequest, bytes], None] | None = None
    #: The owner asks for the file the send_file skill sends: the bytes of each file that arrived.
    file_out: Callable[[pytest.FixtureRequest], list[bytes]] | None = None
    #: A reminder due in a guest's chat and a collector's notice: {"owner": [...], "guest": [...]} once both came
    #: (the channel's reminders looked for every tests/waiting.py REMINDER_POLL_SECONDS, not the product's 30 s).
    notices: Callable[[pytest.FixtureRequest], dict[str, list[str]]] | None = None
    #: The channel started with the owner and an allowed guest: their two chats (``GuestChats``).
    guests: Callable[[pytest.FixtureRequest], GuestChats] | None = None
    #: The owner's chat, and how the platform delivers the owner's last message again (``RepeatingChat``).
    again: Callable[[pytest.FixtureRequest], RepeatingChat] | None = None
    #: The owner's chat on the running channel, which the case stops and starts again (``RestartingChat``).
    held: Callable[[pytest.FixtureRequest], RestartingChat] | None = None
    #: The owner's chat on a platform that refuses the bot's sends for now until allowed (``RefusingChat``).
    later: Callable[[pytest.FixtureRequest], RefusingChat] | None = None
    #: The owner's chat on the started channel for the job case, when its busy driver's (``busy``) is not it.
    job_chat: Callable[[pytest.FixtureRequest], Chat] | None = None
    commands: bool = True  # its busy chat takes typed commands (the COMMANDS case); else why not in ``skips``
    skips: typing.Mapping[str, str] = dataclasses.field(default_factory=dict)


def register(name: str, drivers: KitDrivers) -> None:
    """Put a channel's drivers into the kit's tables (its ``tests/kit_<name>.py`` calls it once)."""
    CHANNELS[name], APPROVE[name], CHAT[name] = drivers.capabilities, drivers.approve, drivers.chat
    STREAM[name], RESTART[name], BUSY[name] = drivers.stream, drivers.restart, drivers.busy
    if drivers.media is not None:
        MEDIA[name] = drivers.media
    if drivers.file_out is not None:
        FILE_OUT[name] = drivers.file_out
    elif "FILE_OUT" in drivers.skips:
        NO_FILE_OUT[name] = drivers.skips["FILE_OUT"]
    if drivers.job_chat is not None:
        JOB_CHATS[name] = drivers.job_chat
    told: list[tuple[str, dict[str, typing.Any], dict[str, str], object]] = [
        ("STRANGERS", STRANGERS, NO_STRANGERS, drivers.strangers),
        ("TOLD_THEIR_ID", TOLD_THEIR_ID, NOT_TOLD_THEIR_ID, drivers.told_their_id),
        ("NOTICES", NOTICES, NO_NOTICES, drivers.notices),
        ("GUESTS", GUESTS, NO_GUESTS, drivers.guests),
        ("AGAIN", AGAIN, NOT_AGAIN, drivers.again),
        ("HELD", HELD, NOT_HELD, drivers.held),
        ("LATER", LATER, NOT_LATER, drivers.later),
        ("COMMANDS", COMMAND_CHATS, NO_COMMANDS, drivers.busy if drivers.commands else None),
    ]
    for label, table, why_not, driver in told:
        if driver is not None:
            table[name] = driver
        elif label in drivers.skips:
            why_not[name] = drivers.skips[label]
        else:
            raise KeyError(f"{name}: no {label} driver, and no reason for it in KitDrivers.skips")


# -- the kit ----------------------------------------------------------------------------------------------------


class ChannelKit(
    _AskCase,
    _ReplyCase,
    _LongReplyCase,
    _StrangerCase,
    _StrangerIdCase,
    _GuestCase,
    _AgainCase,
    _HeldCase,
    _LaterCase,
    _StreamCase,
    _MediaInCase,
    _FileOutCase,
    _RestartCase,
    _BusyCase,
    _NoticesCase,
    _JobCase,
    _CommandCase,
):
    """Every case of the kit, each on every channel of ``channels``. A test module runs the kit on its group of
    channels by a subclass named ``Test<Group>`` that sets ``channels``."""

    channels: tuple[str, ...] = ()

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """pytest's hook for the class's tests: each case once per channel of the group."""
        metafunc.parametrize("channel", self.channels)


def _drivers_in_their_own_files() -> None:
    """Each registered channel without drivers above: its ``tests/kit_<name>.py`` (it calls ``register``)."""
    import importlib
    import importlib.util

    from messaging_llm_bot.conversation.routes import channel_names

    for name in channel_names():
        if name not in CHANNELS and importlib.util.find_spec(f"tests.kit_{name}") is not None:
            importlib.import_module(f"tests.kit_{name}")


_drivers_in_their_own_files()
