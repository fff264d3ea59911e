"""Spending caps (assistant_framework/spending.py): a runner at its cap is skipped for the period, the next one answers.

Through the real bot and the fake Bot API with runner A (capped) and runner B (the "local" one), both
FakeChatServers; the day is the ledger's clock, which the test sets (``runtime.llm.spending.clock``).
Then the client alone: no runner left, background work at 80 %, a server that reports no usage.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from assistant_framework.spending import STATE_FILE, CallTokens, SpendingLedger, call_cost
from messaging_llm_bot.llm.client import LLMClient, LLMError
from messaging_llm_bot.llm.slots import background_calls
from tests.fakes.chat_server import FakeChatServer
from tests.telegram_harness import OWNER, texts

BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture
def server_b():
    with FakeChatServer() as server:
        yield server


def _runners(a: FakeChatServer, b: FakeChatServer, limits: dict, b_limits: dict | None = None) -> list[dict]:
    return [
        {"name": "A", "base_url": a.base_url, "model": "a-model", "timeout_seconds": 10, "limits": limits},
        {"name": "B", "base_url": b.base_url, "model": "b-model", "timeout_seconds": 10, "limits": b_limits or {}},
    ]


def test_a_capped_runner_hands_over_to_the_next_until_the_next_day(fake, start_bot, chat_server, server_b):
    def two_runners(config: dict) -> None:
        config["llm"]["runners"] = _runners(chat_server, server_b, {"daily_tokens": 300})

    bot = start_bot(config_patch=two_runners, progress=False)
    day = [datetime(2026, 12, 1, 23, 50, tzinfo=BERLIN)]
    bot.runtime.llm.spending.clock = lambda: day[0]  # the test's clock: the ledger's day and month

    chat_server.enqueue({"content": '{"reply": "from A"}', "usage": {"prompt_tokens": 250, "completion_tokens": 100}})
    fake.send_message("first")
    fake.wait_for(lambda: any("from A" in t for t in texts(fake)))
    # 350 reported tokens passed the cap of 300: the owner is told once, naming who answers now.
    notice = fake.wait_for(lambda: [t for t in texts(fake) if "reached its daily tokens" in t])
    assert "'A'" in notice[0] and "350 of 300" in notice[0] and "'B' answers" in notice[0]

    server_b.enqueue('{"reply": "from B"}', '{"reply": "B again"}')
    fake.send_message("second")
    fake.wait_for(lambda: any("from B" in t for t in texts(fake)))
    fake.send_message("third")
    fake.wait_for(lambda: any("B again" in t for t in texts(fake)))
    assert len(chat_server.chat_requests) == 1 and len(server_b.chat_requests) == 2
    assert sum("reached its daily" in t for t in texts(fake)) == 1  # told once

    day[0] = datetime(2026, 12, 2, 0, 5, tzinfo=BERLIN)  # the next day in runtime.timezone
    chat_server.enqueue('{"reply": "A is back"}')
    fake.send_message("fourth")
    fake.wait_for(lambda: any("A is back" in t for t in texts(fake)))
    assert len(server_b.chat_requests) == 2
    counts = bot.runtime.workspace.read_json(STATE_FILE)["runners"]["A"]
    assert counts["day"] == "2026-12-02" and counts["month"] == "2026-12" and counts["month_tokens"] > 350


def test_with_every_runner_capped_the_owner_gets_one_sentence_and_nothing_is_sent(
    fake, start_bot, chat_server, server_b
):
    def capped(config: dict) -> None:
        config["llm"]["runners"] = _runners(chat_server, server_b, {"daily_cost": 0.0}, {"monthly_tokens": 0})

    start_bot(config_patch=capped, progress=False)
    fake.send_message("hello")
    reply = fake.wait_for_messages(OWNER, 1)[0]["text"]
    assert reply.startswith("Every model runner ('A', 'B') has reached its spending cap, so nothing was sent")
    assert chat_server.chat_requests == [] and server_b.chat_requests == []


def _client(a: FakeChatServer, b: FakeChatServer, workspace, limits: dict, **kw) -> LLMClient:
    client = LLMClient({"runners": _runners(a, b, limits, **kw), "retries_per_runner": 0})
    client.spending = SpendingLedger(workspace, "Europe/Berlin")
    return client


def test_background_work_stops_at_80_percent_while_the_owners_turns_go_on(chat_server, server_b, workspace):
    client = _client(chat_server, server_b, workspace, {"monthly_tokens": 1000}, b_limits={"daily_tokens": 0})
    try:
        chat_server.enqueue({"content": "x", "usage": {"prompt_tokens": 800, "completion_tokens": 10}})
        client.complete([{"role": "user", "content": "hi"}])
        # 810 of 1000 on A; B is at its own cap: background work has no runner left ...
        with background_calls(), pytest.raises(LLMError) as err:
            client.complete([{"role": "user", "content": "extract facts"}])
        assert err.value.kind == "spending_cap"
        # ... and an owner's turn still goes to A.
        chat_server.enqueue("for the owner")
        assert client.complete([{"role": "user", "content": "hi again"}]).text == "for the owner"
        assert len(chat_server.chat_requests) == 2 and server_b.chat_requests == []
    finally:
        client.close()


def test_a_server_without_usage_is_counted_from_the_characters_and_said_so(chat_server, server_b, workspace):
    client = _client(chat_server, server_b, workspace, {"daily_tokens": 100000})
    try:
        chat_server.enqueue({"content": "y" * 400, "usage": None})
        client.complete([{"role": "user", "content": "z" * 4000}])
        (use,) = client.spending.uses(client.runners[0])
        assert use.estimated and 1000 <= use.used <= 1200
        assert "partly estimated" in use.describe()
    finally:
        client.close()


def test_cost_uses_the_price_and_a_broken_ledger_starts_from_zero(workspace):
    from assistant_framework.config.settings import RunnerSettings
    from assistant_framework.config.settings.fields import read_record

    runner = read_record(
        RunnerSettings,
        {
            "name": "paid",
            "base_url": "http://127.0.0.1:1/v1",
            "model": "m",
            "price": {"input_per_mtok": 2.0, "output_per_mtok": 8.0, "cached_input_per_mtok": 0.5},
            "limits": {"daily_cost": 0.01},
        },
    )
    usage = CallTokens(prompt=1000, completion=500, cached=400)
    assert call_cost(usage, runner) == pytest.approx((600 * 2.0 + 400 * 0.5 + 500 * 8.0) / 1e6)
    workspace.write_text(STATE_FILE, "{broken")
    ledger = SpendingLedger(workspace, "Europe/Berlin")
    assert ledger.blocking(runner, background=False) is None
    for _ in range(2):
        ledger.record(runner, usage, sent_chars=0, answer_chars=0, next_runner=None)
    assert ledger.blocking(runner, background=False).cap == "daily_cost"
