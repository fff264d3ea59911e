"""Spending caps (assistant_framework/spending/): a runner at its cap is skipped for the period, the next one answers.

Through the real bot and the fake Bot API with runner A (capped) and runner B (the "local" one), both
FakeChatServers; the day is the ledger's clock, which the test sets (``runtime.llm.spending.clock``).
Then the client alone: no runner left, background work at 80 %, a server that reports no usage.
"""

from __future__ import annotations

import threading
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from assistant_framework.spending import STATE_FILE, CallTokens, CapUse, SpendingLedger, call_cost, call_estimate
from messaging_llm_bot.llm.client import LLMClient, LLMError
from messaging_llm_bot.llm.slots import background_calls
from tests.fakes.chat_server import FakeChatServer
from tests.telegram_harness import texts
from tests.waiting import wait_until

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
        config["llm"]["runners"] = _runners(chat_server, server_b, {"daily_tokens": 20000})

    bot = start_bot(config_patch=two_runners, progress=False)
    day = [datetime(2026, 12, 1, 23, 50, tzinfo=BERLIN)]
    bot.runtime.llm.spending.clock = lambda: day[0]  # the test's clock: the ledger's day and month

    # The call's estimate fits in the cap; the server reports more than that (an estimate is no tokenizer).
    reported = {"prompt_tokens": 19000, "completion_tokens": 1500}
    chat_server.enqueue({"content": '{"reply": "from A"}', "usage": reported})
    fake.send_message("first")
    fake.wait_for(lambda: any("from A" in t for t in texts(fake)))
    # 20,500 reported tokens reached the cap of 20,000: the owner is told once, naming who answers now.
    notice = fake.wait_for(lambda: [t for t in texts(fake) if "reached its daily tokens" in t])
    assert "'A'" in notice[0] and "20,500 of 20,000" in notice[0] and "'B' answers" in notice[0]

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
    # The file is written once the reply is out (the ledger's reads count the call before that).
    counts = fake.wait_for(
        lambda: (row := bot.runtime.workspace.read_json(STATE_FILE)["runners"]["A"])["day"] == "2026-12-02" and row
    )
    assert counts["month"] == "2026-12" and counts["month_tokens"] > 20500


def test_a_runner_with_room_for_a_small_call_answers_it_and_hands_a_big_one_to_the_next(
    fake, start_bot, chat_server, server_b
):
    """The check before a call includes the call's own estimate (its prompt plus its max_tokens): a call that
    would pass the cap goes to the next runner, so the cap is not passed by one big call."""
    limit = 1_000_000

    def two_runners(config: dict) -> None:
        config["llm"]["runners"] = _runners(chat_server, server_b, {"daily_tokens": limit})

    bot = start_bot(config_patch=two_runners, progress=False)
    ledger = bot.runtime.llm.spending
    ledger.clock = lambda: datetime(2026, 12, 1, 12, 0, tzinfo=BERLIN)
    small = {"prompt_tokens": 10, "completion_tokens": 10}
    chat_server.enqueue({"content": '{"reply": "one from A"}', "usage": small})
    fake.send_message("first")
    fake.wait_for(lambda: any("one from A" in t for t in texts(fake)))
    # What a small turn's request is estimated at (its prompt and max_tokens): leave room for it and 300 more.
    estimate = call_estimate(chat_server.chat_requests[0]).total
    ledger.record(bot.runtime.llm.runners[0], CallTokens(prompt=limit - 20 - estimate - 300))

    chat_server.enqueue({"content": '{"reply": "two from A"}', "usage": small})
    fake.send_message("second")  # a few tokens more than the first (its history): fits
    fake.wait_for(lambda: any("two from A" in t for t in texts(fake)))
    server_b.enqueue('{"reply": "the long one from B"}')
    fake.send_message("long " * 800)  # ~1,000 tokens more: would pass the cap
    fake.wait_for(lambda: any("the long one from B" in t for t in texts(fake)))
    assert len(chat_server.chat_requests) == 2 and len(server_b.chat_requests) == 1
    (use,) = ledger.uses(bot.runtime.llm.runners[0])
    assert use.used <= limit and not use.reached and use.refused == 1
    # The owner is told once that A had too little left for that call and that B answers such calls.
    notice = fake.wait_for(lambda: [t for t in texts(fake) if "too little for a call of about" in t])
    assert "'A' has" in notice[0] and "'B' answers such calls" in notice[0] and "still go to 'A'" in notice[0]
    fake.send_message("/stats")  # says what the cap held back, not only the share
    stats = fake.wait_for(lambda: [t for t in texts(fake) if "Spending caps" in t])[0]
    assert "(99 %), resets 2026-12-02 00:00+01:00; 1 call held back by it" in stats


def test_with_every_runner_capped_the_owner_gets_one_sentence_and_nothing_is_sent(
    fake, start_bot, chat_server, server_b
):
    def capped(config: dict) -> None:
        config["llm"]["runners"] = _runners(chat_server, server_b, {"daily_cost": 0.0}, {"monthly_tokens": 0})

    start_bot(config_patch=capped, progress=False)
    fake.send_message("hello")
    replies = fake.wait_for(lambda: [t for t in texts(fake) if t.startswith("Every model runner")])
    assert replies[0].startswith("Every model runner ('A', 'B') has reached its spending cap, so nothing was sent")
    assert chat_server.chat_requests == [] and server_b.chat_requests == []
    # The owner is told once per runner that it is paused (the counts of the period reached it before a call).
    fake.send_message("again")
    fake.wait_for(lambda: len([t for t in texts(fake) if t.startswith("Every model runner")]) == 2)
    notices = fake.wait_for(lambda: [t for t in texts(fake) if "spending:" in t] if len(texts(fake)) >= 4 else None)
    assert len(notices) == 2  # in either order: each is sent on its own
    assert any("'A' reached its daily cost" in t for t in notices) and any("'B' reached" in t for t in notices)


def _client(a: FakeChatServer, b: FakeChatServer, workspace, limits: dict, **kw) -> LLMClient:
    client = LLMClient.from_section(
        {"runners": _runners(a, b, limits, **kw), "retries_per_runner": 0, "max_tokens": 50}
    )
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


def test_calls_running_at_once_cannot_pass_a_cap_together(chat_server, server_b, workspace):
    """A call in flight holds its estimate: a second call that fits alone but not beside it goes to the next
    runner, and nothing is held once the first is counted."""
    config = {"runners": _runners(chat_server, server_b, {"daily_tokens": 1000}), "max_tokens": 50}
    client = LLMClient.from_section({**config, "retries_per_runner": 0, "max_concurrency": 2})
    client.spending = SpendingLedger(workspace, "Europe/Berlin")
    release = threading.Event()
    chat_server.set_handler(lambda request: "first from A" if release.wait(10) else "late")
    server_b.enqueue("second from B")
    message = [{"role": "user", "content": "x" * 2400}]  # about 600 + 4 + 50 tokens: one fits in 1,000, two do not
    answers: list[str] = []
    first = threading.Thread(target=lambda: answers.append(client.complete(message).text))
    try:
        first.start()
        assert chat_server.wait_for_requests(1, path="/chat/completions")
        assert client.complete(message).text == "second from B"
        release.set()
        first.join(10)
        assert answers == ["first from A"] and len(chat_server.chat_requests) == 1
        (use,) = client.spending.uses(client.runners[0])
        assert use.held == 0 and 0 < use.used <= 1000  # the first call's hold went when it was counted
    finally:
        release.set()
        first.join(10)
        client.close()


def test_a_picture_counts_in_the_estimate_so_a_photo_turn_goes_where_it_fits(chat_server, server_b, workspace):
    """A picture is tokens too (``IMAGE_TOKENS`` in the estimate): the text alone fits in A's 1,000, with a photo
    the call goes to B."""
    runners = [dict(r, vision=True) for r in _runners(chat_server, server_b, {"daily_tokens": 1000})]
    client = LLMClient.from_section({"runners": runners, "retries_per_runner": 0, "max_tokens": 50})
    client.spending = SpendingLedger(workspace, "Europe/Berlin")
    pixel = "data:image/png;base64,iVBORw0KGgo="  # the bytes do not matter: the fake reads no picture
    photo = [{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": pixel}}]
    try:
        chat_server.enqueue("words from A")
        assert client.complete([{"role": "user", "content": "what is this?"}], vision=True).text == "words from A"
        server_b.enqueue("a picture from B")
        assert client.complete([{"role": "user", "content": photo}], vision=True).text == "a picture from B"
        assert len(chat_server.chat_requests) == 1 and len(server_b.chat_requests) == 1
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
        ledger.record(runner, usage)
    assert ledger.blocking(runner, background=False).cap == "daily_cost"


def test_two_ledgers_on_one_workspace_add_up_as_the_bot_and_a_cli_command_do(workspace):
    """The bot and ``eval skills``/``trace replay`` (another process) count into one state/spending.json: each
    call reads and writes it under its lock, so neither erases the other's calls (a cached copy did)."""
    from assistant_framework.config.settings import RunnerSettings
    from assistant_framework.config.settings.fields import read_record

    runner = read_record(
        RunnerSettings,
        {"name": "A", "base_url": "http://127.0.0.1:1/v1", "model": "m", "limits": {"daily_tokens": 1000}},
    )
    bot, cli = SpendingLedger(workspace, "Europe/Berlin"), SpendingLedger(workspace, "Europe/Berlin")
    bot.record(runner, CallTokens(prompt=100, completion=0))
    cli.record(runner, CallTokens(prompt=700, completion=0))
    bot.record(runner, CallTokens(prompt=50, completion=0))
    assert workspace.read_json(STATE_FILE)["runners"]["A"]["day_tokens"] == 850
    held = bot.hold(runner, CallTokens(prompt=100, completion=100), background=False)
    assert isinstance(held, CapUse) and held.used == 850  # the bot sees the CLI's calls: 850 + 200 would pass


def test_counts_kept_until_the_reply_is_out_are_seen_by_every_check_and_written_once(workspace):
    """A turn's calls are written to the file after its reply is out (``after_reply``): until then the count is
    in memory, where this thread's next check and another thread's see it (its hold is dropped in the same step),
    and a write made meanwhile (another turn's count, a skip) takes it along, once."""
    from assistant_framework.config.settings import RunnerSettings
    from assistant_framework.config.settings.fields import read_record

    runner = read_record(
        RunnerSettings,
        {"name": "A", "base_url": "http://127.0.0.1:1/v1", "model": "m", "limits": {"daily_tokens": 1000}},
    )
    ledger = SpendingLedger(workspace, "Europe/Berlin")
    seen: list[object] = []
    with ledger.after_reply():
        held = ledger.hold(runner, CallTokens(prompt=100, completion=100), background=False)
        ledger.record(runner, CallTokens(prompt=850, completion=0), hold=held if not isinstance(held, CapUse) else None)
        assert not workspace.exists(STATE_FILE)  # not written yet
        assert ledger.used("A")["day_tokens"] == 850
        other = threading.Thread(
            target=lambda: seen.append(ledger.hold(runner, CallTokens(prompt=100, completion=100), background=False))
        )
        other.start()
        other.join()
        assert isinstance(seen[0], CapUse) and seen[0].used == 850 and seen[0].held == 0  # counted, not held too
        ledger.record(runner, CallTokens(prompt=50, completion=0))  # still in memory: this thread defers
    assert workspace.read_json(STATE_FILE)["runners"]["A"]["day_tokens"] == 900
    with ledger.after_reply():
        ledger.record(runner, CallTokens(prompt=10, completion=0))
        threading.Thread(target=lambda: ledger.record(runner, CallTokens(prompt=5, completion=0))).start()
        wait_until(lambda: workspace.read_json(STATE_FILE)["runners"]["A"]["day_tokens"] == 915)
    assert workspace.read_json(STATE_FILE)["runners"]["A"]["day_tokens"] == 915  # the block's end wrote nothing twice


def test_counts_that_could_not_be_written_after_the_reply_stay_counted_and_go_with_the_next_write(workspace, caplog):
    """The end of ``after_reply`` writes the turn's counts; when the file's lock cannot be had (another process holds
    it past the wait), the turn goes on, the counts stay in memory, and the next write takes them along."""
    from assistant_framework.config.settings import RunnerSettings
    from assistant_framework.config.settings.fields import read_record

    runner = read_record(RunnerSettings, {"name": "A", "base_url": "http://127.0.0.1:1/v1", "model": "m"})
    ledger = SpendingLedger(workspace, "Europe/Berlin")
    real_lock = workspace.lock

    def no_lock(rel: str, timeout: float = 30.0):
        raise TimeoutError(f"{rel} is locked")

    with ledger.after_reply():
        ledger.record(runner, CallTokens(prompt=40, completion=2))
        workspace.lock = no_lock  # type: ignore[method-assign]
    assert "could not write the spending counts" in caplog.text
    assert not workspace.exists(STATE_FILE) and ledger.used("A")["day_tokens"] == 42
    workspace.lock = real_lock  # type: ignore[method-assign]
    ledger.record(runner, CallTokens(prompt=8, completion=0))
    assert workspace.read_json(STATE_FILE)["runners"]["A"]["day_tokens"] == 50 == ledger.used("A")["day_tokens"]


def test_a_turns_second_call_is_checked_with_its_first_calls_count(fake, start_bot, chat_server, server_b):
    """The turn's first call reached runner A's cap (its count is not in the file until the reply is out): the
    same turn's next call, after the skill ran, goes to B."""

    def two_runners(config: dict) -> None:
        config["llm"]["runners"] = _runners(chat_server, server_b, {"daily_tokens": 20000})

    start_bot(config_patch=two_runners, progress=False)
    first = {
        "content": '{"skill": "shopping", "args": {}}',
        "usage": {"prompt_tokens": 19000, "completion_tokens": 1500},
    }
    chat_server.enqueue(first, '{"reply": "A again"}')
    server_b.enqueue('{"reply": "from B"}')
    fake.send_message("what is on my list?")
    fake.wait_for(lambda: any("from B" in t for t in texts(fake)))
    assert len(chat_server.chat_requests) == 1 and len(server_b.chat_requests) == 1
    assert not any("A again" in t for t in texts(fake))


#: ``state/spending.json`` as the ledger wrote it before its rows were typed (``RunnerCounts``): the same old file
#: counted on the same way must give these bytes (the file on disk does not change with the types).
OLD_STATE = {
    "runners": {
        "A": {
            "day": "2026-12-02",
            "day_tokens": 900,
            "day_cost": 0.01,
            "day_estimated": True,
            "day_refused": {"daily_tokens": 2},
            "month": "2026-12",
            "month_tokens": 900,
            "month_cost": 0.01,
            "month_estimated": True,
            "month_refused": {},
            "told": {"daily_tokens": "2026-12-02"},
        },
        "B": {
            "day": "2026-12-03",
            "day_tokens": 5,
            "day_cost": 0.0,
            "day_estimated": False,
            "day_refused": [],
            "month": "2026-11",
            "month_tokens": 7,
            "month_cost": 0.0,
            "month_estimated": False,
        },
    }
}
STATE_AFTER = (
    '{\n "runners": {\n  "A": {\n   "day": "2026-12-03",\n   "day_cost": 0.0046,\n   "day_estimated": false,\n'
    '   "day_refused": {\n    "daily_tokens": 1\n   },\n   "day_tokens": 1100,\n   "month": "2026-12",\n'
    '   "month_cost": 0.0146,\n   "month_estimated": true,\n   "month_refused": {},\n   "month_tokens": 2000,\n'
    '   "told": {\n    "daily_tokens": "2026-12-03"\n   }\n  },\n  "B": {\n   "day": "2026-12-03",\n'
    '   "day_cost": 0.0,\n   "day_estimated": false,\n   "day_refused": {},\n   "day_tokens": 5,\n'
    '   "month": "2026-12",\n   "month_cost": 0.0,\n   "month_estimated": false,\n   "month_refused": {},\n'
    '   "month_tokens": 0\n  }\n }\n}\n'
)


def test_an_old_spending_file_is_counted_on_and_written_back_byte_for_byte_as_before(workspace):
    """A new day for A (its day counts start again, the month's go on), a new month for B (and its hand-broken
    ``day_refused`` list read as none), a call that reaches A's cap (told once) and a refused one: the file is
    the one the ledger wrote before its rows had a type."""
    import json

    from assistant_framework.config.settings import RunnerSettings
    from assistant_framework.config.settings.fields import read_record

    workspace.write_text(STATE_FILE, json.dumps(OLD_STATE))
    told: list[str] = []
    ledger = SpendingLedger(
        workspace,
        "Europe/Berlin",
        clock=lambda: datetime(2026, 12, 3, 9, 30, tzinfo=BERLIN),
        capped=lambda use, next_runner: told.append(use.cap),
    )
    a = read_record(
        RunnerSettings,
        {
            "name": "A",
            "base_url": "http://127.0.0.1:1/v1",
            "model": "m",
            "price": {"input_per_mtok": 2.0, "output_per_mtok": 8.0},
            "limits": {"daily_tokens": 1000, "monthly_cost": 1.0},
        },
    )
    b = read_record(
        RunnerSettings, {"name": "B", "base_url": "http://127.0.0.1:1/v1", "model": "m", "limits": {"daily_tokens": 10}}
    )
    ledger.record(a, CallTokens(prompt=700, completion=400))
    ledger.record(b, CallTokens(prompt=0, completion=0), estimate=CallTokens(prompt=3, completion=0), answer="four")
    blocked = ledger.blocking(a, background=False)
    assert blocked is not None and blocked.cap == "daily_tokens"
    ledger.skipped(blocked, "B")
    assert workspace.read_text(STATE_FILE) == STATE_AFTER
    assert told == ["daily_tokens"]


def test_a_calls_estimate_counts_each_history_text_once_and_the_same_as_estimate_tokens():
    """Each call estimates the whole conversation again: a text seen before is not counted again (the history's
    texts are the same call after call), and every message is still estimated as ``estimate_tokens`` does."""
    from assistant_framework.spending import calls
    from assistant_framework.tokens import estimate_tokens

    history = [
        {"role": "user" if i % 2 else "assistant", "content": f"message {i} über the garden " * 3} for i in range(40)
    ]
    document = {"role": "user", "content": "ß" * (calls.MEMO_CHARS + 1)}
    body = {"messages": [{"role": "system", "content": "You help."}, *history, document], "max_tokens": 100}
    first = call_estimate(body)
    texts = [m["content"] for m in body["messages"]]
    assert first == CallTokens(sum(estimate_tokens(t) + calls.MESSAGE_TOKENS for t in texts), 100)
    before = calls._short_text_tokens.cache_info()
    body["messages"].append({"role": "user", "content": "and the roses?"})
    assert call_estimate(body).prompt == first.prompt + estimate_tokens("and the roses?") + calls.MESSAGE_TOKENS
    after = calls._short_text_tokens.cache_info()
    assert (after.misses - before.misses, after.hits - before.hits) == (1, len(history) + 1)
