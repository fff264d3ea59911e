"""Background upkeep waits for the replies in progress (assistant_framework/background.py's ``FOREGROUND``):
a worker made with ``yield_seconds`` starts a job once no turn or reply is in progress, or after that long;
a drain does not wait for the foreground."""

from __future__ import annotations

import threading
import time

from assistant_framework.background import FOREGROUND, BackgroundWorker
from assistant_framework.memory import MemoryService
from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.incoming import AgentMessage
from tests.waiting import wait_until


def test_a_job_waits_while_a_reply_is_in_progress_and_runs_once_it_is_out():
    worker = BackgroundWorker("test-yield", yield_seconds=5.0)
    ran = threading.Event()
    try:
        with FOREGROUND.active():
            assert FOREGROUND.busy
            worker.submit(ran.set, "job")
            assert not ran.wait(0.3)  # the reply is still on its way
        assert ran.wait(10)  # at once after it (5 s at most, were another turn running)
    finally:
        worker.stop()


def test_the_wait_is_bounded_while_replies_keep_coming():
    worker = BackgroundWorker("test-yield", yield_seconds=0.05)
    ran = threading.Event()
    try:
        with FOREGROUND.active():
            worker.submit(ran.set, "job")
            assert ran.wait(10)  # ran although the foreground never went idle
    finally:
        worker.stop()


def test_a_worker_without_yield_seconds_does_not_wait():
    worker = BackgroundWorker("test-no-yield")
    ran = threading.Event()
    try:
        with FOREGROUND.active():
            worker.submit(ran.set, "job")
            assert ran.wait(10)
    finally:
        worker.stop()


def test_a_drain_does_not_wait_for_the_foreground():
    worker = BackgroundWorker("test-yield", yield_seconds=30.0)
    ran = threading.Event()
    try:
        with FOREGROUND.active():  # e.g. a turn that reads the traces (/why, /stats)
            worker.submit(ran.set, "job")
            began = time.monotonic()
            assert worker.drain(20)
            assert ran.is_set() and time.monotonic() - began < 20
    finally:
        worker.stop()


def test_a_logged_turn_is_indexed_after_the_reply(tmp_path):
    service = MemoryService(Workspace(tmp_path / "ws"), {"runtime": {"timezone": "UTC"}})

    def indexed() -> int:
        return service.index.query("SELECT count(*) FROM entries WHERE text LIKE '%walnut%'")[0][0]

    try:
        with FOREGROUND.active():  # the turn is answered and its reply sent
            service.log_turn("c", "user", "walnut bread")
            service.log_turn("c", "assistant", "walnut bread it is")
            time.sleep(0.3)
            assert indexed() == 0
        wait_until(lambda: indexed() == 2, what="both lines indexed once the reply is out")
    finally:
        service.close()


def test_a_turn_is_foreground_while_it_runs(bot_config, workspace, chat_server, make_agent):
    agent = make_agent(bot_config, workspace)
    seen: list[bool] = []

    def answer(request: dict) -> dict:
        seen.append(FOREGROUND.busy)
        return {"content": '{"reply": "hi"}'}

    chat_server.set_handler(answer)
    assert not FOREGROUND.busy
    result = agent.handle(AgentMessage("c1", "hello"))
    assert result.ok and seen and all(seen)
    assert not FOREGROUND.busy


def test_jobs_queued_behind_a_wait_do_not_each_wait_again():
    worker = BackgroundWorker("test-yield", yield_seconds=0.3)
    done: list[int] = []
    try:
        with FOREGROUND.active():  # replies keep coming: the foreground never goes idle
            began = time.monotonic()
            for n in range(20):
                worker.submit(lambda n=n: done.append(n), f"job {n}")
            wait_until(lambda: len(done) == 20, timeout=30, what="the twenty jobs")
            # One wait of about 0.3 s for all of them, not 0.3 s each (6 s, past the bound however fast the
            # machine): the queue falls no further behind. The bound leaves a loaded machine 4.7 s for twenty appends.
            assert time.monotonic() - began < 5
            assert done == list(range(20))
    finally:
        worker.stop()
