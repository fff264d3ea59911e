"""Model-call slots: user turns go before background memory calls (issue 19.4)."""

from __future__ import annotations

import threading
import time

from messaging_llm_bot.llm.client import LLMClient
from messaging_llm_bot.llm.slots import BACKGROUND, PrioritySlots, background_calls, in_background


def _wait_until(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def test_background_call_waits_while_a_user_call_waits(chat_server):
    """Regression: fact extraction took the next free slot ahead of a user turn waiting for it."""
    release = threading.Event()
    order: list[str] = []

    def answer(request: dict) -> str:
        who = request["messages"][-1]["content"]
        order.append(who)
        if who == "first user turn":
            release.wait(10)
        return '{"reply": "ok"}'

    chat_server.set_handler(answer)
    client = LLMClient.from_section(
        {
            "runners": [{"name": "f", "base_url": chat_server.base_url, "model": "m"}],
            "max_concurrency": 1,
            "retries_per_runner": 0,
        }
    )

    def call(text: str, background: bool = False) -> None:
        if background:
            with background_calls():
                client.complete([{"role": "user", "content": text}])
        else:
            client.complete([{"role": "user", "content": text}])

    threads = [threading.Thread(target=call, args=("first user turn",))]
    threads[0].start()
    _wait_until(lambda: order == ["first user turn"])
    threads.append(threading.Thread(target=call, args=("fact extraction", True)))
    threads[1].start()
    _wait_until(lambda: client._semaphore._waiting[BACKGROUND] == 1)  # the background call waits for the slot
    threads.append(threading.Thread(target=call, args=("second user turn",)))
    threads[2].start()
    _wait_until(lambda: client._semaphore.waiting_foreground == 1)
    release.set()
    for t in threads:
        t.join(10)
    assert order == ["first user turn", "second user turn", "fact extraction"]


def test_slots_bound_concurrency_and_background_runs_when_no_user_waits():
    slots = PrioritySlots(2)
    slots.acquire()
    slots.acquire()
    got = threading.Event()

    def background() -> None:
        with background_calls():
            assert in_background()
            with slots:
                got.set()

    t = threading.Thread(target=background)
    t.start()
    assert not got.wait(0.1)  # both slots taken
    slots.release()
    assert got.wait(5)  # no user call waiting: the background call goes
    t.join(5)
    slots.release()
    assert not in_background()


def test_owner_call_takes_the_next_slot_before_calls_that_waited_longer():
    """A chat frontend runs the owner's turn inside ``owner_calls()``: a busy friend's or group's calls
    waiting for the slot do not go first (issue 26.9). Five rounds: without the priority the owner
    would win all five by chance about once in a thousand runs."""
    from messaging_llm_bot.llm.slots import owner_calls

    def one_round() -> list[str]:
        slots = PrioritySlots(1)
        slots.acquire()
        order: list[str] = []

        def call(name: str, owner: bool = False) -> None:
            if owner:
                with owner_calls():
                    slots.acquire()
            else:
                slots.acquire()
            order.append(name)
            slots.release()

        threads = [threading.Thread(target=call, args=(f"friend {n}",)) for n in range(3)]
        for t in threads:
            t.start()
        _wait_until(lambda: slots.waiting_foreground == 3)
        threads.append(threading.Thread(target=call, args=("owner", True)))
        threads[-1].start()
        _wait_until(lambda: slots.waiting_foreground == 4)
        slots.release()
        for t in threads:
            t.join(5)
        return order

    for _ in range(5):
        order = one_round()
        assert order[0] == "owner" and sorted(order[1:]) == ["friend 0", "friend 1", "friend 2"]
