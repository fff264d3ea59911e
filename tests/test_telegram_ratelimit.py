"""Telegram's rate budget goes to replies first (issue 19.3): the limiter's rules, on a real event loop."""

from __future__ import annotations

import asyncio

import pytest

from messaging_llm_bot.channels.telegram.ratelimit import OPTIONAL, BudgetSkipped, ReplyFirstRateLimiter


def _run(coro):
    return asyncio.run(coro)


async def _call(limiter: ReplyFirstRateLimiter, log: list, endpoint: str, chat_id: int = 1, optional: bool = False):
    async def callback(name: str, data: dict) -> bool:
        log.append(name)
        return True

    return await limiter.process_request(
        callback, (endpoint, {"chat_id": chat_id}), {}, endpoint, {"chat_id": chat_id}, OPTIONAL if optional else None
    )


def test_typing_and_progress_edits_are_skipped_while_a_reply_waits():
    async def scenario() -> tuple[list, list]:
        limiter = ReplyFirstRateLimiter(per_second=5, reserve=1)
        log: list[str] = []
        for i in range(5):  # the whole budget of this second
            await _call(limiter, log, "sendMessage", chat_id=i + 1)
        waiting = asyncio.create_task(_call(limiter, log, "sendMessage", chat_id=9))
        await asyncio.sleep(0.01)  # the reply now waits for budget
        skipped = []
        for endpoint, optional in (("sendChatAction", False), ("editMessageText", True), ("sendMessage", True)):
            with pytest.raises(BudgetSkipped):
                await _call(limiter, log, endpoint, chat_id=2, optional=optional)
            skipped.append(endpoint)
        await waiting
        return log, skipped

    log, skipped = _run(scenario())
    assert log == ["sendMessage"] * 6  # every reply sent, no optional call in between
    assert skipped == ["sendChatAction", "editMessageText", "sendMessage"]


def test_optional_calls_leave_the_reserve_for_replies():
    async def scenario() -> list:
        limiter = ReplyFirstRateLimiter(per_second=5, reserve=2)
        log: list[str] = []
        results = []
        for _ in range(4):
            try:
                await _call(limiter, log, "sendChatAction")
                results.append("sent")
            except BudgetSkipped:
                results.append("skipped")
        # The reserve is still there: two replies go at once, without waiting for a refill.
        loop = asyncio.get_running_loop()
        started = loop.time()
        await _call(limiter, log, "sendMessage")
        await _call(limiter, log, "sendMessage")
        results.append("replies waited" if loop.time() - started > 0.1 else "replies at once")
        return results

    assert _run(scenario()) == ["sent", "sent", "sent", "skipped", "replies at once"]  # 5 - 3 = the reserve of 2


def test_replies_wait_in_arrival_order_and_all_arrive():
    async def scenario() -> list:
        # The bucket holds a second's calls; the 20 beyond it wait their turn: a tenth of a second at 200 a
        # second (it was 10 beyond 20 a second, half a second of waiting for the same order).
        limiter = ReplyFirstRateLimiter(per_second=200)
        log: list[str] = []
        await asyncio.gather(*(_call(limiter, log, f"sendMessage#{i}", chat_id=i + 1) for i in range(220)))
        return log

    assert _run(scenario()) == [f"sendMessage#{i}" for i in range(220)]


def test_calls_without_a_chat_are_not_limited():
    async def scenario() -> list:
        limiter = ReplyFirstRateLimiter(per_second=1)
        log: list[str] = []

        async def callback(name: str, data: dict) -> bool:
            log.append(name)
            return True

        for _ in range(5):
            await limiter.process_request(callback, ("getMe", {}), {}, "getMe", {}, None)
        return log

    assert _run(scenario()) == ["getMe"] * 5
