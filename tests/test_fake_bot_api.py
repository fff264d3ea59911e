"""The fake Bot API server driven by a real python-telegram-bot Application over HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator

import pytest
import requests
from telegram import Update
from telegram.error import BadRequest, Conflict, Forbidden, NetworkError, RetryAfter
from telegram.ext import Application, ApplicationBuilder, CommandHandler, ContextTypes, MessageHandler, filters

from tests.fakes.bot_api import FakeBotAPI


@pytest.fixture
def fake() -> FakeBotAPI:
    with FakeBotAPI() as server:
        yield server


def build_app(fake: FakeBotAPI) -> Application:
    return (
        ApplicationBuilder()
        .token(fake.token)
        .base_url(fake.base_url)
        .base_file_url(fake.base_file_url)
        .get_updates_read_timeout(5)
        .build()
    )


@contextlib.asynccontextmanager
async def polling(app: Application) -> AsyncIterator[Application]:
    async with app:
        await app.start()
        await app.updater.start_polling(poll_interval=0, timeout=1)
        try:
            yield app
        finally:
            await app.updater.stop()
            await app.stop()


async def wait_async(fake: FakeBotAPI, predicate, timeout: float = 10):
    return await asyncio.to_thread(fake.wait_for, predicate, timeout)


async def echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    await update.effective_message.reply_text(f"echo: {update.effective_message.text}")


async def start(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    await update.effective_message.reply_text("started")


def test_echo_and_command_with_bot_suffix(fake: FakeBotAPI) -> None:
    async def scenario() -> None:
        app = build_app(fake)
        app.add_handler(CommandHandler("start", start))
        app.add_handler(MessageHandler(filters.TEXT & ~filters.COMMAND, echo))
        async with polling(app):
            fake.send_message("hello there", user_id=7)
            msgs = await asyncio.to_thread(fake.wait_for_messages, 7, 1)
            assert msgs[0]["text"] == "echo: hello there"
            fake.send_message("/start@otherbot", user_id=7)  # addressed to another bot: ignored
            fake.send_message("/start@testbot", user_id=7)
            msgs = await asyncio.to_thread(fake.wait_for_messages, 7, 2)
            assert [m["text"] for m in msgs] == ["echo: hello there", "started"]
        methods = [c["method"] for c in fake.calls()]
        assert methods[0] == "getMe" and "deleteWebhook" in methods
        # All three updates were fetched; the last getUpdates confirmed them, so nothing is pending.
        assert fake.calls("getUpdates")[-1]["params"]["offset"] == 4

    asyncio.run(scenario())


def test_group_chat_and_edited_message(fake: FakeBotAPI) -> None:
    seen: list[tuple[str, int]] = []

    async def record(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        kind = "edit" if update.edited_message else "new"
        seen.append((kind, update.effective_chat.id))
        await update.effective_message.reply_text(f"{kind}: {update.effective_message.text}")

    async def scenario() -> None:
        app = build_app(fake)
        app.add_handler(MessageHandler(filters.TEXT, record))
        async with polling(app):
            upd = fake.send_message("hi group", user_id=7, chat_id=-100, chat_type="supergroup")
            await asyncio.to_thread(fake.wait_for_messages, -100, 1)
            fake.edit_message(-100, upd["message"]["message_id"], "hi group!")
            msgs = await asyncio.to_thread(fake.wait_for_messages, -100, 2)
        assert [m["text"] for m in msgs] == ["new: hi group", "edit: hi group!"]
        assert seen == [("new", -100), ("edit", -100)]
        # reply_text quotes the user's message in groups; the fake resolves it.
        assert msgs[0]["reply_to_message"]["text"] == "hi group"

    asyncio.run(scenario())


def test_retry_after_is_raised_to_direct_send(fake: FakeBotAPI) -> None:
    async def scenario() -> None:
        app = build_app(fake)
        async with app:
            fake.fail_next("sendMessage", status=429, retry_after=3)
            with pytest.raises(RetryAfter) as info:
                await app.bot.send_message(chat_id=5, text="hi")
            retry = info.value.retry_after
            assert (retry.total_seconds() if hasattr(retry, "total_seconds") else float(retry)) == 3
            sent = await app.bot.send_message(chat_id=5, text="hi")  # the fault was used up
            assert sent.text == "hi"
        assert [c["status"] for c in fake.calls("sendMessage")] == [429, 200]

    asyncio.run(scenario())


def test_injected_statuses_map_to_ptb_errors(fake: FakeBotAPI) -> None:
    async def scenario() -> None:
        app = build_app(fake)
        async with app:
            fake.fail_next("sendMessage", status=502)
            with pytest.raises(NetworkError):
                await app.bot.send_message(chat_id=5, text="x")
            fake.fail_next("sendMessage", status=400, times=2)
            for _ in range(2):
                with pytest.raises(BadRequest, match="(?i)can't parse entities"):
                    await app.bot.send_message(chat_id=5, text="x")
            fake.conflict_on_get_updates(True)
            with pytest.raises(Conflict):
                await app.bot.get_updates(timeout=0)
            fake.conflict_on_get_updates(False)
            assert await app.bot.get_updates(timeout=0) == ()

    asyncio.run(scenario())


def test_a_refused_chat_is_answered_like_the_real_bot_api_until_lifted(fake: FakeBotAPI) -> None:
    fake.refuse_chat(5)  # the user blocked the bot
    fake.refuse_chat(-100, status=400)  # a chat that does not exist (any more)
    url = f"{fake.base_url}{fake.token}/sendMessage"
    for _ in range(2):  # for good, not once
        answer = requests.post(url, json={"chat_id": 5, "text": "hi"}, timeout=5)
        assert answer.status_code == 403
        assert answer.json() == {
            "ok": False,
            "error_code": 403,
            "description": "Forbidden: bot was blocked by the user",
        }
    answer = requests.post(url, json={"chat_id": -100, "text": "hi"}, timeout=5)
    assert answer.json() == {"ok": False, "error_code": 400, "description": "Bad Request: chat not found"}

    async def scenario() -> None:
        app = build_app(fake)
        async with app:
            with pytest.raises(Forbidden, match="bot was blocked by the user"):
                await app.bot.send_message(chat_id=5, text="x")
            with pytest.raises(BadRequest, match="(?i)chat not found"):
                await app.bot.send_message(chat_id=-100, text="x")
            assert (await app.bot.send_message(chat_id=6, text="x")).text == "x"  # other chats are served
            fake.refuse_chat(5, None)
            assert (await app.bot.send_message(chat_id=5, text="back")).text == "back"

    asyncio.run(scenario())


def test_server_side_validation(fake: FakeBotAPI) -> None:
    async def scenario() -> None:
        app = build_app(fake)
        async with app:
            bot = app.bot
            with pytest.raises(BadRequest, match="(?i)message is too long"):
                await bot.send_message(chat_id=5, text="x" * 4097)
            await bot.send_message(chat_id=5, text="😀" * 2048)  # 4096 UTF-16 units: allowed
            with pytest.raises(BadRequest, match="(?i)message is too long"):
                await bot.send_message(chat_id=5, text="😀" * 2049)
            with pytest.raises(BadRequest, match="(?i)can't parse entities"):
                await bot.send_message(chat_id=5, text="Price: 3.50 (approx) - ok!", parse_mode="MarkdownV2")
            with pytest.raises(BadRequest, match="(?i)can't parse entities"):
                await bot.send_message(chat_id=5, text="*bold", parse_mode="MarkdownV2")
            with pytest.raises(BadRequest, match="(?i)can't parse entities"):
                await bot.send_message(chat_id=5, text="<b>bold</i>", parse_mode="HTML")
            with pytest.raises(BadRequest, match="(?i)can't parse entities"):
                await bot.send_message(chat_id=5, text="<blink>x</blink>", parse_mode="HTML")
            with pytest.raises(BadRequest, match="(?i)message text is empty"):
                await bot.send_message(chat_id=5, text="  ")
            ok = await bot.send_message(chat_id=5, text=r"*Price:* 3\.50 \(approx\)", parse_mode="MarkdownV2")
            assert ok.text == "Price: 3.50 (approx)" and ok.entities[0].type == "bold"
            html = await bot.send_message(
                chat_id=5, text='<b>a</b> &amp; <a href="http://x.y">l</a>', parse_mode="HTML"
            )
            assert html.text == "a & l" and [e.type for e in html.entities] == ["bold", "text_link"]
            with pytest.raises(BadRequest, match="(?i)message is not modified"):
                await bot.edit_message_text(
                    chat_id=5, message_id=ok.message_id, text="Price: 3.50 (approx)", entities=ok.entities
                )
            await bot.edit_message_text(chat_id=5, message_id=ok.message_id, text="changed")
            await bot.delete_message(chat_id=5, message_id=html.message_id)
        live = fake.messages(5)
        assert [m["text"] for m in live] == ["😀" * 2048, "changed"]

    asyncio.run(scenario())


def test_document_round_trip_via_get_file(fake: FakeBotAPI) -> None:
    received: list[bytes] = []

    async def on_document(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        doc = update.message.document
        data = await (await doc.get_file()).download_as_bytearray()
        received.append(bytes(data))
        await update.message.reply_text(f"got {doc.file_name} ({len(data)} bytes) {update.message.caption}")

    async def on_voice(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        data = await (await update.message.voice.get_file()).download_as_bytearray()
        seconds = update.message.voice.duration.total_seconds()  # a timedelta (PTB_TIMEDELTA, tests/conftest.py)
        await update.message.reply_text(f"voice {len(data)} bytes, {seconds:g}s")

    async def scenario() -> None:
        app = build_app(fake)
        app.add_handler(MessageHandler(filters.Document.ALL, on_document))
        app.add_handler(MessageHandler(filters.VOICE, on_voice))
        async with polling(app):
            content = "Grüße, ünïcode file name\n".encode() * 100
            fake.send_document(3, "my notes ü.txt", content, caption="please read")
            fake.send_voice(3, b"OggS" + bytes(500), duration=4)
            msgs = await asyncio.to_thread(fake.wait_for_messages, 3, 2)
        assert received == [content]
        assert msgs[0]["text"] == f"got my notes ü.txt ({len(content)} bytes) please read"
        assert msgs[1]["text"] == "voice 504 bytes, 4s"
        assert len(fake.calls("getFile")) == 2

    asyncio.run(scenario())


def test_upload_commands_callbacks_and_unknown_methods(fake: FakeBotAPI) -> None:
    from telegram import BotCommand, InlineKeyboardButton, InlineKeyboardMarkup

    async def scenario() -> None:
        app = build_app(fake)
        async with app:
            bot = app.bot
            await bot.set_my_commands([BotCommand("start", "Start"), BotCommand("help", "Help")])
            assert [c.command for c in await bot.get_my_commands()] == ["start", "help"]
            doc = await bot.send_document(chat_id=9, document=b"report body", filename="report.txt", caption="r")
            assert doc.document.file_name == "report.txt"
            markup = InlineKeyboardMarkup([[InlineKeyboardButton("Yes", callback_data="yes")]])
            asked = await bot.send_message(chat_id=9, text="Sure?", reply_markup=markup)
            await bot.edit_message_reply_markup(chat_id=9, message_id=asked.message_id, reply_markup=None)
            await bot.send_chat_action(chat_id=9, action="typing")
            await bot.answer_callback_query("42")
        upload = fake.calls("sendDocument")[0]["params"]["document"]
        assert upload["content"] == b"report body" and upload["filename"] == "report.txt"
        assert [m.get("caption") for m in fake.messages(9)] == ["r", None]
        assert "reply_markup" not in fake.messages(9)[1]
        update = fake.callback_query(9, "yes", asked.message_id)
        assert update["callback_query"]["message"]["text"] == "Sure?"

    asyncio.run(scenario())
    response = requests.post(f"{fake.base_url}{fake.token}/noSuchMethod", data={"a": "1"}, timeout=5)
    assert response.status_code == 404 and response.json()["ok"] is False
    assert fake.calls("noSuchMethod")[0]["params"] == {"a": 1}
    assert requests.post(f"{fake.base_url}999:wrong/getMe", timeout=5).status_code == 401


def test_json_and_query_string_bodies(fake: FakeBotAPI) -> None:
    url = f"{fake.base_url}{fake.token}"
    sent = requests.post(f"{url}/sendMessage", json={"chat_id": 4, "text": "123"}, timeout=5).json()
    assert sent["ok"] and sent["result"]["text"] == "123"  # text stays a string
    sent = requests.post(f"{url}/sendMessage?chat_id=4&text=%5B1%5D", timeout=5).json()
    assert sent["result"]["text"] == "[1]"
    fake.send_message("one")
    fake.send_message("two")
    got = requests.get(f"{url}/getUpdates?offset=0&timeout=0", timeout=5).json()["result"]
    assert [u["message"]["text"] for u in got] == ["one", "two"]
    last = got[-1]["update_id"]
    assert requests.post(f"{url}/getUpdates", data={"offset": str(last + 1)}, timeout=5).json()["result"] == []
    # Confirmed updates are dropped for good.
    assert requests.post(f"{url}/getUpdates", data={"offset": "0"}, timeout=5).json()["result"] == []
    assert json.loads(json.dumps(fake.calls()))  # records are plain JSON for text calls


def test_markup_parsers_accept_valid_and_reject_broken_markup() -> None:
    from tests.fakes.bot_api_markup import MarkupError, parse_html, parse_markdown_v2, parse_text

    text, ents = parse_markdown_v2("*bold _both_* `x\\`y` ```py\ncode.here()\n``` [l\\.k](http://a.b/c\\)) 3\\.5")
    assert text == "bold both x`y code.here()\n l.k 3.5"
    assert [(e["type"], e["offset"], e["length"]) for e in ents] == [
        ("bold", 0, 9),
        ("italic", 5, 4),
        ("code", 10, 3),
        ("pre", 14, 12),
        ("text_link", 27, 3),
    ]
    assert ents[3]["language"] == "py" and ents[4]["url"] == "http://a.b/c)"
    text, ents = parse_markdown_v2("😀 *b*")
    assert ents == [{"type": "bold", "offset": 3, "length": 1}]  # UTF-16 offsets
    for broken in ["3.50", "(x)", "a-b", "*open", "_open", "[x](y", "`open", "```\nopen", "a!", "x|y"]:
        with pytest.raises(MarkupError):
            parse_markdown_v2(broken)
    text, ents = parse_html('<pre><code class="language-go">a &lt; b</code></pre> <tg-spoiler>s</tg-spoiler>')
    assert text == "a < b s" and ents[0] == {"type": "pre", "offset": 0, "length": 5, "language": "go"}
    for broken in ["<b>x", "x</b>", "<b><i>x</b></i>", "<div>x</div>", "a < b", "<a>no href</a>"]:
        with pytest.raises(MarkupError):
            parse_html(broken)
    assert parse_text("*legacy* _md_", "Markdown")[0] == "legacy md"
    with pytest.raises(MarkupError):
        parse_text("*legacy", "Markdown")


def _waiting_poll(fake: FakeBotAPI) -> tuple[threading.Thread, list[list[dict]]]:
    """A ``getUpdates`` with a 30 s timeout in a thread, waiting once this returns; its answer goes in the list."""
    fake.long_poll_cap = 30  # only a push can end this poll within the client's 10 s timeout
    url = f"{fake.base_url}{fake.token}/getUpdates"
    got: list[list[dict]] = []
    poll = threading.Thread(
        target=lambda: got.append(
            requests.post(url, data={"offset": "0", "timeout": "30"}, timeout=10).json()["result"]
        )
    )
    poll.start()
    fake.wait_for(lambda: fake.waiting_polls() == 1)  # the poll is waiting: nothing queued yet
    return poll, got


def test_long_poll_returns_an_update_pushed_while_waiting(fake: FakeBotAPI) -> None:
    poll, got = _waiting_poll(fake)
    fake.send_message("late")
    poll.join(15)
    assert [[u["message"]["text"] for u in answer] for answer in got] == [["late"]]
    assert fake.calls("getUpdates")[0]["params"]["timeout"] == 30


def test_updates_pushed_together_reach_a_waiting_poll_in_one_answer(fake: FakeBotAPI) -> None:
    poll, got = _waiting_poll(fake)
    with fake.together():
        for text in ("one", "two", "three"):
            fake.send_message(text)
            time.sleep(0.05)  # the poll woken by the first push answers only after the block
    poll.join(15)
    assert [[u["message"]["text"] for u in answer] for answer in got] == [["one", "two", "three"]]


def test_wait_for_times_out_with_a_clear_error(fake: FakeBotAPI) -> None:
    with pytest.raises(TimeoutError, match="FakeBotAPI.wait_for"):
        fake.wait_for(lambda: fake.messages(1), timeout=0.1)
    with pytest.raises(KeyError, match="no message 5 in chat 1"):
        fake.edit_message(1, 5, "x")
    requests.post(f"{fake.base_url}{fake.token}/setWebhook", data={"url": "https://x.example/hook"}, timeout=5)
    blocked = requests.post(f"{fake.base_url}{fake.token}/getUpdates", timeout=5)
    assert blocked.status_code == 409 and "webhook is active" in blocked.json()["description"]


def test_fake_adds_no_delay_of_its_own() -> None:
    """Keep-alive like Telegram, TCP_NODELAY, headers and body in one segment, a deep listen backlog."""
    import http.client
    import socket

    with FakeBotAPI() as api:
        conn = http.client.HTTPConnection("127.0.0.1", api.port, timeout=5)
        for _ in range(2):  # both calls over one connection: no connect per call
            conn.request("POST", f"/bot{api.token}/getMe")
            assert json.loads(conn.getresponse().read())["ok"] is True
        server_side = list(api._connections)
        assert len(server_side) == 1
        assert server_side[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        raw = socket.create_connection(("127.0.0.1", api.port), timeout=5)
        raw.sendall(f"GET /bot{api.token}/getMe HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        first = raw.recv(65536)  # one write on the server: the body is in the same segment
        head, _, body = first.partition(b"\r\n\r\n")
        length = int([h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")][0].split(b":")[1])
        assert len(body) == length
        raw.close()
        conn.close()
        assert api._server.request_queue_size >= 128


def test_redeliver_hands_a_confirmed_update_to_the_next_poll_only(fake: FakeBotAPI) -> None:
    import threading

    url = f"{fake.base_url}{fake.token}/getUpdates"

    def poll(offset: int, timeout: int = 0) -> list[int]:
        got = requests.post(url, data={"offset": str(offset), "timeout": str(timeout)}, timeout=10).json()["result"]
        return [u["update_id"] for u in got]

    first = fake.send_message("once")
    assert poll(0) == [first["update_id"]]
    assert poll(first["update_id"] + 1) == []  # confirmed: gone, as on Telegram
    fake.long_poll_cap = 30
    stale: list[int] = []
    waiting = threading.Thread(target=lambda: stale.extend(poll(first["update_id"] + 1, timeout=30)))
    waiting.start()  # a poll already open (e.g. of a bot being stopped) must neither see nor drop it
    fake.wait_for(lambda: fake.waiting_polls() == 1)
    fake.redeliver(first)
    assert not fake.redelivered(first["update_id"])
    assert poll(0) == [first["update_id"]] and fake.redelivered(first["update_id"])
    assert poll(first["update_id"] + 1) == []  # confirmed again: gone
    fake.send_message("wake the stale poll")
    waiting.join(15)
    assert first["update_id"] not in stale
