"""Calls that did not end in an answer, against the spending caps (issue 39 item 5, issue 40 "Spending").

A call the server took and that was cut (``/stop``, its runner's ``timeout_seconds``) counts its estimate: the
server may have read the whole prompt and written up to ``max_tokens`` (before, such calls counted nothing and
ten of them went to a runner capped far below them). A call that failed with an error status counts nothing
and gives its hold back, so the next call is not refused as if the failed one still held its share.

Through the real Telegram bot and the fake Bot API, with one capped runner on a FakeChatServer that hangs
until the test releases it; the ledger's day is the test's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from assistant_framework.spending import CallTokens, call_estimate
from tests.telegram_harness import texts

CAP = 1_000_000
NONE_LEFT = "Every model runner ('A') has reached its spending cap or has too little of it left for this request"


def _capped_runner(chat_server, timeout: float = 10):
    def patch(config: dict) -> None:
        config["llm"]["runners"] = [
            {
                "name": "A",
                "base_url": chat_server.base_url,
                "model": "a-model",
                "timeout_seconds": timeout,
                "limits": {"daily_tokens": CAP},
            }
        ]
        config["llm"]["retries_per_runner"] = 0

    return patch


@pytest.fixture
def hanging(chat_server) -> Iterator[threading.Event]:
    """``hang()``: the fake model server takes the next requests and answers none until the test ends."""
    release = threading.Event()
    yield release
    release.set()
    chat_server.set_handler(None)


def _hang(chat_server, release: threading.Event) -> None:
    chat_server.set_handler(lambda request: None if release.wait(60) else None)


def _first_turn_and_room(fake, bot, chat_server, calls: float) -> int:
    """Answer one turn, then fill runner A's count of today so that ``calls`` times that turn's estimate is left
    of the cap; return the estimate."""
    ledger = bot.runtime.llm.spending
    ledger.clock = lambda: datetime(2026, 12, 1, 12, 0, tzinfo=ZoneInfo("Europe/Berlin"))
    chat_server.enqueue('{"reply": "first answer"}')
    fake.send_message("hello")
    fake.wait_for(lambda: "first answer" in texts(fake))
    runner = bot.runtime.llm.runners[0]
    estimate = call_estimate(chat_server.chat_requests[0]).total
    (use,) = ledger.uses(runner)
    ledger.record(runner, CallTokens(prompt=int(CAP - use.used - calls * estimate)))
    return estimate


def _used(bot) -> tuple[float, bool]:
    (use,) = bot.runtime.llm.spending.uses(bot.runtime.llm.runners[0])
    return use.used, use.estimated


def _shown(fake) -> list[str]:
    """Every text the owner's chat showed: sent messages and their edits."""
    return [call["params"].get("text", "") for call in fake.calls("sendMessage") + fake.calls("editMessageText")]


@pytest.mark.parametrize("where", ["before-the-answer", "mid-answer"])
def test_a_call_ended_by_stop_counts_its_estimate_so_the_next_does_not_pass_the_cap(
    fake, start_bot, chat_server, hanging, where
):
    bot = start_bot(config_patch=_capped_runner(chat_server), stream=True, progress=True)
    _first_turn_and_room(fake, bot, chat_server, 1.5)
    before, _ = _used(bot)
    if where == "before-the-answer":  # the server reads the prompt: no byte of the answer yet
        _hang(chat_server, hanging)
        fake.send_message("write me a long story")
        assert chat_server.wait_for_requests(2, timeout=10)
    else:  # a few words streamed and shown, then only keep-alives: the server is still at it
        chat_server.enqueue({"content": '{"reply": "Once upon a time', "keepalive_every": 0.2, "keepalive_for": 30})
        fake.send_message("write me a long story")
        fake.wait_for(lambda: any("Once upon" in t for t in _shown(fake)), timeout=10)
    fake.send_message("/stop")
    fake.wait_for(lambda: any("Stopped" in t for t in _shown(fake)), timeout=10)
    cut = call_estimate(chat_server.chat_requests[1]).total
    used, estimated = _used(bot)
    assert used == before + cut and estimated  # the cut call counted at its estimate, said to be estimated

    fake.send_message("and a short one?")
    refusal = fake.wait_for(lambda: [t for t in texts(fake) if t.startswith(NONE_LEFT)], timeout=10)
    assert len(refusal) == 1 and len(chat_server.chat_requests) == 2  # nothing more was sent to A


def test_a_call_cut_by_its_timeout_counts_its_estimate_so_the_next_does_not_pass_the_cap(
    fake, start_bot, chat_server, hanging
):
    bot = start_bot(config_patch=_capped_runner(chat_server, timeout=1), progress=False)
    _first_turn_and_room(fake, bot, chat_server, 1.5)
    before, _ = _used(bot)
    _hang(chat_server, hanging)
    fake.send_message("write me a long story")
    fake.wait_for(lambda: any("timed out" in t for t in texts(fake)), timeout=15)
    used, estimated = _used(bot)
    assert used == before + call_estimate(chat_server.chat_requests[1]).total and estimated

    fake.send_message("and a short one?")
    refusal = fake.wait_for(lambda: [t for t in texts(fake) if t.startswith(NONE_LEFT)], timeout=10)
    assert len(refusal) == 1 and len(chat_server.chat_requests) == 2


def test_a_failed_call_gives_its_hold_back_so_the_next_call_is_not_refused(fake, start_bot, chat_server):
    """An error status: the server did not take the call. Nothing is counted, and its hold is released: with room
    for one and a half calls, a held estimate would leave too little for the next."""
    bot = start_bot(config_patch=_capped_runner(chat_server), progress=False)
    _first_turn_and_room(fake, bot, chat_server, 1.5)
    before, _ = _used(bot)
    chat_server.enqueue({"status": 500})
    fake.send_message("this one fails")
    fake.wait_for(lambda: any("internal error" in t for t in texts(fake)), timeout=10)
    assert _used(bot)[0] == before

    chat_server.enqueue('{"reply": "back again"}')
    fake.send_message("and now?")
    fake.wait_for(lambda: "back again" in texts(fake), timeout=10)
    assert not [t for t in texts(fake) if t.startswith(NONE_LEFT)]
    assert len(chat_server.chat_requests) == 3
