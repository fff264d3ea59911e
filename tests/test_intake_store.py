"""How a polled message is stored on its way to the turn (conversation/intake.py's ``ChannelIntake._accept``): a
write without fsync (Telegram's poll; ``sync_stored`` commits it before the platform is told) is made in the
event loop, with no hand-off to a thread and back; while another acceptance holds the inbox (its fsync under way)
it goes to a thread, so the loop never waits for a disk. The real inbox on files in a temporary folder."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

from assistant_framework.inbox import Inbox
from assistant_framework.inbox import store as inbox_store
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.held import StorageOutage
from messaging_llm_bot.conversation.intake import Arrival, ChannelIntake


class CountingExecutor(ThreadPoolExecutor):
    """The loop's default executor (``asyncio.to_thread``'s), counting the calls handed to it."""

    def __init__(self) -> None:
        super().__init__(2)
        self.calls = 0

    def submit(self, fn, /, *args, **kwargs):
        self.calls += 1
        return super().submit(fn, *args, **kwargs)


def intake(inbox: Inbox) -> ChannelIntake:
    # store_all reads only the turns' inbox and channel name; the queues and tasks are for take.
    turns = SimpleNamespace(inbox=inbox, channel="telegram")
    return ChannelIntake(turns, None, None, StorageOutage("telegram"))  # type: ignore[arg-type]


def arrival(n: int) -> Arrival:
    return Arrival(str(n), "tg:1", {"update_id": n}, 1, True, f"q{n}", n, True, queue=1, fingerprint=f"f{n}")


async def no_say(_text: str) -> None:
    raise AssertionError("nothing is said when the store works")


def test_a_polled_message_is_stored_in_the_event_loop_without_a_thread(tmp_path) -> None:
    inbox = Inbox(Workspace(tmp_path))
    executor = CountingExecutor()

    async def main() -> int:
        asyncio.get_running_loop().set_default_executor(executor)
        return await intake(inbox).store_all([arrival(7)], lambda _a: no_say, synced=False)

    assert asyncio.run(main()) == 1
    assert executor.calls == 0  # no hand-off: the turn starts one thread wake-up sooner
    assert [item.source_id for item in inbox.pending()] == ["7"] and inbox.unsynced and inbox.seen("7", "f7")


def test_while_another_acceptance_syncs_the_store_goes_to_a_thread_and_the_loop_runs_on(tmp_path, monkeypatch) -> None:
    inbox = Inbox(Workspace(tmp_path))
    synced_on = threading.Event()
    release = threading.Event()
    real_fsync = inbox_store.fsync_all

    def slow_fsync(paths, missing_ok=False):  # another message's fsync, held until the test lets it go
        synced_on.set()
        release.wait(10)
        real_fsync(paths, missing_ok=missing_ok)

    monkeypatch.setattr(inbox_store, "fsync_all", slow_fsync)
    other = threading.Thread(target=inbox.accept, args=("9", "tg:2", {"update_id": 9}))
    other.start()
    assert synced_on.wait(10)
    # A safety net: a loop that waited for the lock would wait for this, not hang.
    threading.Timer(2.0, release.set).start()

    async def main() -> tuple[bool, float]:
        store = asyncio.create_task(intake(inbox).store_all([arrival(7)], lambda _a: no_say, synced=False))
        started = time.monotonic()
        await asyncio.sleep(0.05)  # the loop runs on meanwhile
        waited = time.monotonic() - started
        stored_meanwhile = store.done()
        release.set()
        assert await store == 1
        return stored_meanwhile, waited

    stored_meanwhile, waited = asyncio.run(main())
    other.join(10)
    assert not stored_meanwhile and waited < 1.0  # the loop did not wait out the other message's fsync
    assert sorted(item.source_id for item in inbox.pending()) == ["7", "9"]
