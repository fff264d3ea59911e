"""Progress and streaming end to end: status message during skills, streamed answer by edits."""

from __future__ import annotations

from tests.telegram_harness import OWNER, all_bot_texts, texts

CALL = '{"skill": "add", "args": {"a": 2, "b": 3}}'


def answer_when_shown(fake, chat_server, answers: list) -> None:
    """A slow model: each answer (``(shown, content)`` in turn) comes only once ``shown()`` holds in the chat,
    waited for instead of a fixed delay."""

    def slow_model(request: dict) -> str | None:
        if not answers:
            return None
        shown, content = answers.pop(0)
        fake.wait_for(shown, timeout=30)
        return content

    chat_server.set_handler(slow_model)


def test_skill_turn_shows_a_status_message_then_only_the_answer(fake, start_bot, chat_server, monkeypatch):
    from messaging_llm_bot.conversation import progress as progress_mod

    # "typing…" after 20 ms instead of the product's 0.3 s (a quick turn's saved call): the model below waits
    # for it, and a grace it only waits out is no part of this test (test_a_turn_done_within_the_grace_...).
    monkeypatch.setattr(progress_mod, "TYPING_GRACE_SECONDS", 0.02)
    start_bot(stream=False)
    # A slow model: each answer comes only once the chat shows what it shows by then (typing while the model
    # thinks, then the skill's status line), waited for instead of a fixed delay.
    typing = lambda: fake.calls("sendChatAction")  # noqa: E731
    status = lambda: any(c["params"]["text"].startswith("🔎 add") for c in fake.calls("sendMessage"))  # noqa: E731
    answers = [(typing, CALL), (status, '{"reply": "2 + 3 = 5"}')]
    answer_when_shown(fake, chat_server, answers)
    fake.send_message("add 2 and 3")
    fake.wait_for(lambda: "2 + 3 = 5" in texts(fake))
    sent = [c["params"]["text"] for c in fake.calls("sendMessage")]
    assert any(t.startswith("🔎 add") for t in sent), sent
    assert fake.calls("deleteMessage"), "the status message is removed before the answer"
    assert texts(fake) == ["2 + 3 = 5"]
    assert fake.calls("sendChatAction")[0]["params"]["action"] == "typing"
    assert not any('"skill"' in t for t in all_bot_texts(fake))


def test_a_status_message_telegram_refuses_is_logged_and_the_answer_comes(
    fake, start_bot, chat_server, monkeypatch, caplog
):
    """The live message's calls are best effort (conversation/progress.py's ``BestEffortLive``): the skill's status
    line that Telegram refuses is left out with one log line, and the turn's answer comes as it would have."""
    import logging

    from messaging_llm_bot.conversation import progress as progress_mod

    monkeypatch.setattr(progress_mod, "TYPING_GRACE_SECONDS", 0.02)
    caplog.set_level(logging.INFO, logger="messaging_llm_bot")
    start_bot(stream=False)
    fake.fail_next("sendMessage", status=400, description="Bad Request: not enough rights to send text messages")
    typing = lambda: fake.calls("sendChatAction")  # noqa: E731
    refused = lambda: any(c["status"] == 400 for c in fake.calls("sendMessage"))  # noqa: E731
    answers = [(typing, CALL), (refused, '{"reply": "2 + 3 = 5"}')]
    answer_when_shown(fake, chat_server, answers)
    fake.send_message("add 2 and 3")
    fake.wait_for(lambda: "2 + 3 = 5" in texts(fake))
    assert texts(fake) == ["2 + 3 = 5"]
    assert [c["params"]["text"][:5] for c in fake.calls("sendMessage")] == ["🔎 add", "2 + 3"]
    logged = [r.getMessage() for r in caplog.records if "the live message in chat" in r.getMessage()]
    assert len(logged) == 1 and "was not sent" in logged[0] and "not enough rights" in logged[0].lower(), logged


def _quick_first_message(monkeypatch) -> None:
    """The first live message 50 ms into a turn instead of 0.3 s (conversation/progress.py: a quick turn needs
    none; test_a_turn_done_within_the_grace_needs_no_live_message): a stream of a few tenths is then shown live."""
    from messaging_llm_bot.conversation import progress as progress_mod

    monkeypatch.setattr(progress_mod, "FIRST_MESSAGE_GRACE_SECONDS", 0.05)


def test_streamed_answer_arrives_by_edits_and_never_shows_a_call(fake, start_bot, chat_server, monkeypatch):
    # Edits every 0.1 s against the fake (telegram.edit_interval_seconds; the default 1 s is Telegram's limit, held
    # by test_edits_are_at_least_the_edit_interval_apart_however_fast_the_answer_grows): the stream is held after
    # words 4, 9 and 13 until the chat shows them, so the growing answer is shown several times, then ends. The
    # call streams for 0.175 s (7 words), over three times the wait before a live message: shown, if it were.
    _quick_first_message(monkeypatch)
    start_bot(stream=True, edit_interval_seconds=0.1)
    chat_server.enqueue({"content": CALL, "chunk_delay": 0.025})
    words = [f"word{i} " for i in range(14)]

    def shown_so_far(index: int) -> None:  # before piece ``index``: the pieces before it are on screen
        if index == 5:  # the live message's first text (its send, or an edit of it)
            fake.wait_for(lambda: any("word4" in t for t in all_bot_texts(fake)), timeout=30)
        elif index in (10, 14):
            last = f"word{index - 1}"
            fake.wait_for(
                lambda: any(last in c["params"].get("text", "") for c in fake.calls("editMessageText")), timeout=30
            )

    chat_server.enqueue(
        {
            "content": "".join(words).strip() + " **done**",
            "stream_chunks": words + ["**done**"],
            "chunk_gate": shown_so_far,
        }
    )
    fake.send_message("stream please")
    fake.wait_for(lambda: any(t.endswith("done") for t in texts(fake)))
    assert chat_server.chat_requests[0]["stream"] is True
    edits = [c["params"]["text"] for c in fake.calls("editMessageText") if c["status"] == 200]
    partial = [e for e in edits if e.startswith("word0") and not e.endswith("done")]
    assert len(partial) >= 2, edits  # the answer grew in place
    final = fake.messages(OWNER)[-1]
    assert final["text"].endswith("word13 done")
    assert {"type": "bold", "offset": len(final["text"]) - 4, "length": 4} in final["entities"]
    assert len(fake.messages(OWNER)) == 1  # the streamed message became the reply
    assert not any("skill" in t and "{" in t for t in all_bot_texts(fake))


def test_model_failure_still_ends_in_a_short_message(fake, start_bot, chat_server):
    start_bot()
    chat_server.set_handler(lambda req: {"status": 500, "body": {"error": {"message": "boom"}}})
    fake.send_message("hello?")
    msgs = fake.wait_for_messages(OWNER, 1, timeout=30)
    assert msgs[0]["text"] and len(msgs[0]["text"]) < 400


def test_long_streamed_answer_becomes_part_one_of_several(fake, start_bot, chat_server, monkeypatch):
    _quick_first_message(monkeypatch)  # live from 50 ms, the answer streaming for 0.3 s
    start_bot(stream=True)
    paragraphs = [f"Paragraph {i}: " + ("lorem ipsum " * 60).strip() for i in range(12)]  # ~9,000 chars
    answer = "\n\n".join(paragraphs)
    chunks = [p + "\n\n" for p in paragraphs[:-1]] + [paragraphs[-1]]
    chat_server.enqueue({"content": answer, "stream_chunks": chunks, "chunk_delay": 0.025})
    fake.send_message("write a lot")
    fake.wait_for(lambda: any(t.startswith("Paragraph 11") or "Paragraph 11:" in t for t in texts(fake)), timeout=20)
    parts = texts(fake)
    assert len(parts) >= 3 and all(len(p) <= 4096 for p in parts)
    assert "\n\n".join(parts).split() == answer.split()  # every word once, in order: nothing lost or repeated
    assert parts[0].startswith("Paragraph 0:")


class _RecordingBot:
    """The three Bot calls Progress makes, recorded (no network: this checks the loop's wake-up)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    async def send_message(self, chat_id, text, **kwargs):
        self.calls.append(("send", text))
        return type("Msg", (), {"message_id": 7})()

    async def edit_message_text(self, text=None, chat_id=None, message_id=None, **kwargs):
        self.calls.append(("edit", text))
        return True

    async def send_chat_action(self, chat_id, action, **kwargs):
        self.calls.append(("typing", action))
        return True


def test_stop_wakes_the_edit_loop_at_once_instead_of_waiting_out_the_interval(monkeypatch):
    """Regression (issue 19.1): stop() waited for the worker's edit-interval sleep, so the final
    edit of every streamed reply went out up to a second late."""
    import asyncio

    from messaging_llm_bot.channels.telegram.progress import TelegramLive
    from messaging_llm_bot.conversation import progress as progress_mod
    from messaging_llm_bot.conversation.progress import Progress

    monkeypatch.setattr(progress_mod, "STOP_WAIT_SECONDS", 3600.0)  # the old code's cap would hide the stall
    monkeypatch.setattr(progress_mod, "FIRST_MESSAGE_GRACE_SECONDS", 0.0, raising=False)

    async def scenario() -> list:
        bot = _RecordingBot()
        p = Progress(TelegramLive(bot, 1), stream=True, edit_interval=3600.0)
        await p.start()
        event = type("Ev", (), {})
        for text in ("first words", "first words and more"):
            ev = event()
            ev.kind, ev.data = "delta", {"text": text}
            p.on_event(ev)
            for _ in range(20):  # let the worker send the first text and start waiting for the interval
                await asyncio.sleep(0)
        stopping = asyncio.create_task(p.stop())
        done, _ = await asyncio.wait({stopping}, timeout=10)  # old code: sleeps out the 3600 s interval
        if not done:
            stopping.cancel()
        return done, bot.calls

    done, calls = asyncio.run(scenario())
    assert done, "stop() did not return: the edit loop was still waiting out its interval"
    assert ("send", "first words" + progress_mod.STREAM_CURSOR) in calls
    assert not any(kind == "edit" for kind, _ in calls)  # the pending intermediate edit is dropped, not sent late


def test_a_turn_cancelled_while_its_stop_waits_for_a_send_ends_cancelled_and_the_send_with_it(monkeypatch):
    """A turn's end waits for the live message's send under way (its id is recorded then), but a cancel of the
    turn meanwhile (the bot's stop gave up on it) goes on: the turn ends cancelled, the send cancelled with it.
    (The wait swallowed it: the cancelled turn went on to record and send its reply after the stop.)"""
    import asyncio
    from types import SimpleNamespace

    from messaging_llm_bot.channels.telegram.progress import TelegramLive
    from messaging_llm_bot.conversation import progress as progress_mod
    from messaging_llm_bot.conversation.progress import Progress

    monkeypatch.setattr(progress_mod, "FIRST_MESSAGE_GRACE_SECONDS", 0.0)

    class SilentBot(_RecordingBot):
        """Telegram takes the live message's send and does not answer."""

        def __init__(self) -> None:
            super().__init__()
            self.sending = asyncio.Event()
            self.send_cancelled = False

        async def send_message(self, chat_id, text, **kwargs):
            self.sending.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.send_cancelled = True
                raise

    async def scenario() -> tuple[bool, bool]:
        bot = SilentBot()
        p = Progress(TelegramLive(bot, 1), stream=True, edit_interval=3600.0)
        await p.start()
        p.on_event(SimpleNamespace(kind="delta", data={"text": "first words"}))
        await asyncio.wait_for(bot.sending.wait(), 10)
        stopping = asyncio.create_task(p.stop())  # the turn's end: waits for the send under way
        for _ in range(20):
            await asyncio.sleep(0)
        assert not stopping.done()
        stopping.cancel()  # the bot's stop gives up on the turn
        await asyncio.wait({stopping}, timeout=10)
        return stopping.cancelled(), bot.send_cancelled

    assert asyncio.run(scenario()) == (True, True)


def test_a_turn_cancelled_while_its_stop_waits_for_the_typing_call_to_end_ends_cancelled(monkeypatch):
    """The turn's end cancels its "typing…" refresher and waits for it; a typing request under way ends as the
    client closes its connection. A cancel of the turn meanwhile (the bot's stop gave up on it) goes on: the
    turn ends cancelled, and the live message's worker with it. (It was taken for the refresher's own cancel and
    dropped: the cancelled turn went on to record and send its reply.)"""
    import asyncio

    from messaging_llm_bot.channels.telegram.progress import TelegramLive
    from messaging_llm_bot.conversation import progress as progress_mod
    from messaging_llm_bot.conversation.progress import Progress

    monkeypatch.setattr(progress_mod, "TYPING_GRACE_SECONDS", 0.0)

    class SlowToCloseBot(_RecordingBot):
        """Telegram does not answer the typing request; cancelled, the client takes a while to close."""

        def __init__(self) -> None:
            super().__init__()
            self.typing = asyncio.Event()
            self.closed = asyncio.Event()

        async def send_chat_action(self, chat_id, action, **kwargs):
            self.typing.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                await self.closed.wait()
                raise

    async def scenario() -> tuple[bool, bool]:
        bot = SlowToCloseBot()
        p = Progress(TelegramLive(bot, 1), stream=True, edit_interval=3600.0)
        await p.start()
        worker = p._tasks[-1]
        await asyncio.wait_for(bot.typing.wait(), 10)
        stopping = asyncio.create_task(p.stop())  # the turn's end: cancels the refresher and waits for it
        for _ in range(20):
            await asyncio.sleep(0)
        assert not stopping.done()
        stopping.cancel()  # the bot's stop gives up on the turn
        bot.closed.set()
        await asyncio.wait({stopping, worker}, timeout=10)
        return stopping.cancelled(), worker.done()

    assert asyncio.run(scenario()) == (True, True)


def test_a_turn_done_within_the_grace_needs_no_live_message():
    """A quick streamed answer: no stream message (the reply is then one sendMessage, not a send plus an edit)."""
    import asyncio

    from messaging_llm_bot.channels.telegram.progress import TelegramLive
    from messaging_llm_bot.conversation.progress import Progress

    async def scenario() -> list:
        bot = _RecordingBot()
        p = Progress(TelegramLive(bot, 1), stream=True)
        await p.start()
        ev = type("Ev", (), {})()
        ev.kind, ev.data = "delta", {"text": "the whole answer"}
        p.on_event(ev)
        for _ in range(20):
            await asyncio.sleep(0)
        await p.stop()
        return bot.calls, p.message_id

    calls, message_id = asyncio.run(scenario())
    assert calls == [] and message_id is None


def test_edits_are_at_least_the_edit_interval_apart_however_fast_the_answer_grows(monkeypatch):
    """The platform's rate limit: a new piece every 5 ms, yet the live message is sent, then edited at most once
    per ``edit_interval`` (each call's start recorded; the interval is counted from the end of the call before)."""
    import asyncio
    import time

    from messaging_llm_bot.channels.telegram.progress import TelegramLive
    from messaging_llm_bot.conversation import progress as progress_mod
    from messaging_llm_bot.conversation.progress import Progress

    monkeypatch.setattr(progress_mod, "FIRST_MESSAGE_GRACE_SECONDS", 0.0)  # the live message at the first piece
    interval = 0.05
    starts: list[float] = []

    class Timed(_RecordingBot):
        async def send_message(self, chat_id, text, **kwargs):
            starts.append(time.monotonic())
            return await super().send_message(chat_id, text, **kwargs)

        async def edit_message_text(self, text=None, chat_id=None, message_id=None, **kwargs):
            starts.append(time.monotonic())
            return await super().edit_message_text(text, chat_id, message_id, **kwargs)

    async def scenario() -> list[tuple[str, str]]:
        bot = Timed()
        p = Progress(TelegramLive(bot, 1), stream=True, edit_interval=interval)
        await p.start()
        text = ""
        for i in range(50):  # 0.25 s at least of pieces 5 ms apart, ten an interval
            text += f"w{i} "
            ev = type("Ev", (), {})()
            ev.kind, ev.data = "delta", {"text": text}
            p.on_event(ev)
            await asyncio.sleep(0.005)
        await p.stop()
        return bot.calls

    calls = asyncio.run(scenario())
    assert [kind for kind, _ in calls if kind != "typing"][:3] == ["send", "edit", "edit"], calls  # it grew
    gaps = [later - earlier for earlier, later in zip(starts, starts[1:], strict=False)]
    assert min(gaps) >= interval, gaps


def test_only_the_events_the_live_message_shows_wake_the_loop(monkeypatch):
    """A round's "thinking", a skill's result, "done", and the answer's text when not streaming reach the loop no
    more: each was a self-pipe write from the turn's thread and a pass of the loop for nothing. A skill call (its
    status line) does. Streaming, the answer's text wakes the loop only when the worker waits for it: a delta in
    the first message's grace or an edit's interval is read when that wait ends (it is still shown)."""
    import asyncio

    from messaging_llm_bot.channels.telegram.progress import TelegramLive
    from messaging_llm_bot.conversation import progress as progress_mod
    from messaging_llm_bot.conversation.progress import Progress

    monkeypatch.setattr(progress_mod, "FIRST_MESSAGE_GRACE_SECONDS", 0.2)

    def event(kind: str, data: dict) -> object:
        ev = type("Ev", (), {})()
        ev.kind, ev.data = kind, data
        return ev

    async def scenario() -> tuple[list[str], list[str], list[str], list, list]:
        bot = _RecordingBot()
        p = Progress(TelegramLive(bot, 1), stream=False, edit_interval=0.1)
        await p.start()
        loop = asyncio.get_running_loop()
        woken: list[str] = []
        real = loop.call_soon_threadsafe

        def counting(callback, *args, **kwargs):
            woken.append(getattr(callback, "__name__", ""))
            return real(callback, *args, **kwargs)

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
        for kind, data in (
            ("thinking", {"round": 1}),
            ("delta", {"text": "not shown"}),
            ("skill_result", {"skill": "notes"}),
            ("skill_call", {"skill": "notes", "args": {}, "round": 1}),
            ("done", {}),
        ):
            p.on_event(event(kind, data))
        quiet = list(woken)
        p.stream = True
        for _ in range(20):
            await asyncio.sleep(0)  # the skill call's status wakes the worker: it waits out the grace
        p.on_event(event("delta", {"text": "shown"}))  # in the grace: no wake-up, read when it ends
        in_grace = list(woken)
        await asyncio.sleep(0.4)  # the grace over, the text shown, an edit's interval over: the worker is idle
        shown_first = list(bot.calls)
        p.on_event(event("delta", {"text": "shown more"}))  # the worker idle: woken
        await asyncio.sleep(0.3)
        await p.stop()
        del loop.call_soon_threadsafe
        return quiet, in_grace, woken, shown_first, bot.calls

    quiet, in_grace, woken, shown_first, calls = asyncio.run(scenario())
    assert quiet == ["_apply"] and in_grace == ["_apply"] and woken == ["_apply", "set"]
    assert ("send", "shown ▍") in shown_first and ("edit", "shown more ▍") in calls
