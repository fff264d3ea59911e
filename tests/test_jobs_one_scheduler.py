"""One scheduler per process, whatever channels run (issue 42): Telegram and Signal in one process on one
runtime (as ``assistant run`` starts both) share one ``JobScheduler`` and one ``ReminderScheduler``, and each
job's runs and each reminder go to the channel its chat id names (conversation/routes.py), once; a job made
without a chat goes to the first configured channel. Through the real services against FakeBotAPI and
FakeSignalDaemon."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from assistant_framework.jobs import JOBS_FILE, RUNS_FILE
from assistant_framework.stores.reminders import ReminderStore
from messaging_llm_bot.conversation.job_router import job_router
from messaging_llm_bot.conversation.job_scheduler import JobScheduler
from messaging_llm_bot.conversation.reminders import ReminderScheduler
from messaging_llm_bot.conversation.routes import channel_of, home_channel
from tests.signal_harness import OWNER as SIGNAL_OWNER
from tests.signal_harness import RunningSignal, signal_config, wait_for
from tests.telegram_harness import OWNER as TELEGRAM_OWNER
from tests.telegram_harness import RunningBot, make_runtime, telegram_config, texts


def _job(job_id: str, message: str, chat_id: object) -> dict:
    created = (datetime.now(timezone.utc) - timedelta(minutes=60, seconds=10)).isoformat(timespec="seconds")
    row = {"id": job_id, "name": job_id, "every_minutes": 60, "created_at": created, "message": message}
    return row if chat_id is None else {**row, "chat_id": chat_id}


class Made:
    """Every JobScheduler and ReminderScheduler made while it watches, weakly held (one freed drops out): what
    the test's runtime made, without a scan of the whole heap after a full collection (each a few tenths of
    a second in a worker process that ran many tests, and the wait for the scheduler's stop repeats it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.jobs: weakref.WeakSet[JobScheduler] = weakref.WeakSet()
        self.reminders: weakref.WeakSet[ReminderScheduler] = weakref.WeakSet()
        for cls, instances in ((JobScheduler, self.jobs), (ReminderScheduler, self.reminders)):
            monkeypatch.setattr(cls, "__init__", self._recording(cls.__init__, instances))

    @staticmethod
    def _recording(init: Callable[..., None], instances: weakref.WeakSet[Any]) -> Callable[..., None]:
        def recorded(obj: Any, *args: Any, **kwargs: Any) -> None:
            init(obj, *args, **kwargs)
            instances.add(obj)

        return recorded

    def running_schedulers(self) -> list[JobScheduler]:
        return [one for one in list(self.jobs) if not one.stopped]

    def reminder_schedulers(self, *, collect: bool = False) -> list[ReminderScheduler]:
        if collect:  # what only a cycle still holds is freed first
            gc.collect()
        return list(self.reminders)


def test_telegram_and_signal_in_one_process_share_one_scheduler_and_each_run_goes_to_its_channel(
    fake, daemon, bot_config, workspace, tmp_path, monkeypatch
):
    made = Made(monkeypatch)
    config = signal_config(telegram_config(bot_config, fake), daemon)
    config["jobs"] = {"poll_seconds": 0.1}
    workspace.write_json(
        JOBS_FILE,
        [
            _job("tgjob", "Water the plants", TELEGRAM_OWNER),
            _job("sigjob", "Stretch", f"sig:{SIGNAL_OWNER}"),
            _job("handjob", "Made by hand", None),  # no chat: the first configured channel, Telegram
        ],
    )
    due = datetime.now(timezone.utc) - timedelta(seconds=5)
    reminders = ReminderStore(workspace)
    reminders.add(f"sig:{SIGNAL_OWNER}", "Signal's reminder", due, "UTC")
    reminders.add(f"tg:{TELEGRAM_OWNER}", "Telegram's reminder", due, "UTC")
    runtime = make_runtime(config, workspace, tmp_path)
    assert home_channel(runtime.settings) == "telegram"
    telegram = RunningBot(runtime)
    signal = RunningSignal(runtime, manage_runtime=False)
    try:
        telegram.start()
        signal.start()
        daemon.wait_connected()
        sent = daemon.wait_sent(2)
        assert sorted((one["recipient"], one["message"]) for one in sent) == [
            ([SIGNAL_OWNER], "⏰ Signal's reminder"),
            ([SIGNAL_OWNER], "🗓 Stretch"),
        ]
        expected = {"🗓 Water the plants", "🗓 Made by hand", "⏰ Telegram's reminder"}
        fake.wait_for(lambda: expected <= set(texts(fake)), timeout=30)
        wait_for(lambda: len(workspace.read_jsonl(RUNS_FILE)) == 3, what="the three runs' lines")

        # One scheduler for both channels: the same object, the only one running, on one thread.
        assert telegram.service.jobs is not None and telegram.service.jobs is signal.service.jobs
        assert made.running_schedulers() == [telegram.service.jobs]
        # and one reminder scheduler, which sent each reminder through its own channel
        assert made.reminder_schedulers() == [job_router(runtime).reminders]
        assert [t.name for t in threading.enumerate()].count("jobs") == 1

        looks = telegram.service.jobs.looks
        wait_for(lambda: telegram.service.jobs.looks >= looks + 3, what="three more looks")
        assert sorted(texts(fake)) == ["⏰ Telegram's reminder", "🗓 Made by hand", "🗓 Water the plants"]  # each once
        assert sorted(m["message"] for m in daemon.sent) == ["⏰ Signal's reminder", "🗓 Stretch"]
        assert reminders.pending() == []
        lines = workspace.read_jsonl(RUNS_FILE)
        assert sorted(line["job"] for line in lines) == ["handjob", "sigjob", "tgjob"]
        assert all(line["outcome"] == "delivered" for line in lines)
    finally:
        signal.stop()
        telegram.stop()
    wait_for(lambda: not made.running_schedulers(), what="the scheduler to stop with the last channel")
    assert made.reminder_schedulers(collect=True) == []


def test_the_registry_routes_every_stored_chat_id_form() -> None:
    """Rows made by every version: Telegram's bare numbers and ``tg:`` ids, Signal's ``sig:``, the terminal's."""
    assert [
        channel_of(c) for c in (7, "-1001", "tg:7", "tg:7:12", "sig:+4915", "console", "wa:4915", "xx:y", None, "")
    ] == [
        "telegram",
        "telegram",
        "telegram",
        "telegram",
        "signal",
        "console",
        "whatsapp",
        "xx",
        "none",
        "none",
    ]


def test_stopping_the_queue_starts_no_job_while_the_running_ones_finish():
    """``AsyncJobQueue.stop`` gives a running callback (a reminder being sent) time to end; the reminders'
    poll repeating meanwhile would start new work during shutdown (seen failing at process exit: "job
    reminders:poll failed", "cannot schedule new futures after shutdown"). The running one finishes, no
    job starts after ``stop`` began."""
    import asyncio

    from messaging_llm_bot.conversation.jobs import AsyncJobQueue

    async def scenario() -> tuple[int, int, bool]:
        queue = AsyncJobQueue()
        sending, release, finished = asyncio.Event(), asyncio.Event(), []
        polls: list[int] = []

        async def send(context: object) -> None:
            sending.set()
            await release.wait()
            finished.append(1)

        async def poll(context: object) -> None:
            polls.append(1)
            if len(polls) >= 3:  # the poll repeats on its own: only then is the send let go
                release.set()

        queue.run_once(send, 0, name="reminder:r1")
        await sending.wait()
        queue.run_repeating(poll, interval=0.01, first=0.01, name="reminders:poll")
        stopping = asyncio.create_task(queue.stop(finish_seconds=30))
        await asyncio.sleep(0)  # stop has begun: from here no job may start
        before = len(polls)
        # Fixed code: nothing else lets it go. 0.05 s is five of the poll's intervals (it was 0.2 s): one poll
        # after stop began is already the bug, and the loop runs the due timers in order whatever the load.
        asyncio.get_running_loop().call_later(0.05, release.set)
        await stopping
        return before, len(polls), bool(finished)

    before, after, finished = asyncio.run(scenario())
    assert finished and after == before


def test_a_run_answered_since_the_look_listed_it_is_not_started_again(tmp_path) -> None:
    """The scheduler's look lists the pending runs in its own thread and hands them to their channel's loop; a run
    answered and completed in between (its first start, by a hook or an earlier look, ended meanwhile) is not
    started again there: its reply would reach the owner twice (a whole run of the suite saw it, test_hooks)."""
    import asyncio

    from assistant_framework.inbox import Inbox
    from assistant_framework.workspace import Workspace
    from messaging_llm_bot.conversation.job_router import ChannelJobs, JobRouter

    inbox = Inbox(Workspace(tmp_path / "ws"))
    answered = inbox.accept("hook:build:d-1", "tg:1", {"run": "answered meanwhile"})
    waiting = inbox.accept("job:j1:now-1", "tg:1", {"run": "still pending"})
    assert answered is not None and waiting is not None
    listed = inbox.pending()
    inbox.complete(answered.item_id)  # answered between the look's listing and its channel's loop
    loop = asyncio.new_event_loop()
    started: list[str] = []
    router = JobRouter(runtime=None)  # type: ignore[arg-type]  # dispatch reads only its channels
    router._channels["telegram"] = ChannelJobs(loop, inbox, lambda job: None, lambda item: started.append(item.item_id))
    try:
        for item in listed:
            router.dispatch(item)
        loop.run_until_complete(asyncio.sleep(0))
    finally:
        loop.close()
    assert started == [waiting.item_id]
