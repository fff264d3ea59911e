"""Document readers at once (docs/documents.md, "The bounds"): each PDF or office file is read in a process of
its own that may take up to 2 GiB of address space, so the whole bot runs at most ``READERS_AT_ONCE`` of them,
whatever the number of chats sending documents; the others wait in order within their message's time bound.
The readers are watched by ``tests/slow_reader.py``."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from messaging_llm_bot.conversation import documents
from messaging_llm_bot.conversation.slots import Slots
from tests.documents_data import pdf_pages
from tests.telegram_harness import OWNER, texts

FRIENDS = [2, 3, 4, 5]


@pytest.mark.subprocess  # the document reader's worker processes
def test_five_chats_sending_pdfs_at_once_run_two_readers_at_a_time_and_each_is_answered(
    fake, start_bot, chat_server, slow_reader
):
    """Five chats send a PDF in the same moment: five readers ran at once before (five times 2 GiB of address
    space: an OOM kill of the bot on a small machine). Now two run at a time, the others wait their turn, and
    every chat gets its document read and its answer."""
    watch = slow_reader(1.0)
    start_bot(allowed_user_ids=[OWNER, *FRIENDS])
    chat_server.enqueue(*['{"reply": "Read it."}'] * 5)
    for user in [OWNER, *FRIENDS]:
        fake.send_document(user, f"report-{user}.pdf", pdf_pages(pages=2, sentence_page=1), mime_type="application/pdf")
    for user in [OWNER, *FRIENDS]:
        fake.wait_for(lambda user=user: "Read it." in texts(fake, user), timeout=40)
    assert len(watch.counts()) == 5, watch.counts()  # each document had its reader
    assert max(watch.counts()) <= 2, watch.counts()  # documents.READERS_AT_ONCE
    turns = [request["messages"][-1]["content"] for request in chat_server.chat_requests]
    assert len(turns) == 5 and all("[Document text] 2 pages" in turn for turn in turns), turns
    assert documents.READERS.taken == 0


@pytest.mark.subprocess  # the document reader's worker process
def test_a_document_that_finds_no_reader_free_in_its_time_is_told_the_time_bound(workspace, bot_config, slow_reader):
    """Both readers held for longer than a message's time bound: its PDF gets the sentence a reader ended at
    the bound gets, no reader process is started for it, and once a reader is free the next PDF is read."""
    from assistant_framework.config.settings import Settings
    from messaging_llm_bot.conversation.images import FilesInput, files_input
    from tests.test_documents import _saved

    watch = slow_reader(0)
    saved = _saved(workspace, "report.pdf", pdf_pages(pages=2, sentence_page=1), "application/pdf")
    rel = saved.rel_path
    settings = Settings.from_config({**bot_config, "documents": {"timeout_seconds": 1}})
    later = Settings.from_config(bot_config)  # a reader process may take more than a second on a busy machine

    async def scenario() -> tuple[object, float, object]:
        assert await documents.READERS.take(0) and await documents.READERS.take(0)
        try:
            began = time.monotonic()
            refused = await files_input(workspace, [saved], settings)
            waited = time.monotonic() - began
        finally:
            documents.READERS.give()
            documents.READERS.give()
        return refused, waited, await files_input(workspace, [saved], later)

    refused, waited, read = asyncio.run(scenario())
    assert refused == (
        f"📄 I saved report.pdf at {rel}, but I cannot read it: reading it took longer than 1 seconds."
    ), refused
    assert 0.9 < waited < 10, waited
    assert isinstance(read, FilesInput) and "[Document text] 2 pages" in read.text
    assert watch.counts() == [1]  # one reader: the second message's
    assert documents.READERS.taken == 0


def test_slots_are_shared_by_event_loops_in_other_threads_and_handed_out_in_order():
    """The bound is the process's: takers on three loops (three channels' threads) share one slot, in the
    order they came; a taker whose wait runs out or is cancelled leaves the line without losing the slot."""
    slots = Slots(1)
    order: list[str] = []
    holder_in, release = threading.Event(), threading.Event()

    def holder() -> None:
        async def hold() -> None:
            assert await slots.take(0)
            holder_in.set()
            await asyncio.to_thread(release.wait, 10)
            slots.give()

        asyncio.run(hold())

    def waiter(name: str, seconds: float = 10) -> None:
        async def wait() -> None:
            if await slots.take(seconds):
                order.append(name)
                slots.give()
            else:
                order.append(f"{name} gave up")

        asyncio.run(wait())

    threads = [threading.Thread(target=holder)]
    threads[0].start()
    assert holder_in.wait(5)
    for name, seconds in [("first", 10), ("impatient", 0.2), ("second", 10)]:
        thread = threading.Thread(target=waiter, args=(name, seconds))
        thread.start()
        threads.append(thread)
        time.sleep(0.05)  # each in line before the next
    time.sleep(0.4)
    assert order == ["impatient gave up"] and slots.taken == 1
    release.set()
    for thread in threads:
        thread.join(10)
    assert order == ["impatient gave up", "first", "second"]
    assert slots.taken == 0


def test_a_cancelled_caller_holds_the_slot_until_its_work_ends():
    """/stop cancels a turn whose document is being read: the reader process still runs, so its slot is given
    back when the work ends, not when the caller is cancelled."""
    slots = Slots(1)
    finish = threading.Event()

    async def scenario() -> None:
        task = asyncio.create_task(slots.run(10, lambda left: finish.wait(10)))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert slots.taken == 1  # the work still runs
        assert not await slots.take(0.1)
        finish.set()
        assert await slots.take(5)
        slots.give()

    asyncio.run(scenario())
    assert slots.taken == 0


def test_a_reader_that_must_run_alone_waits_for_every_slot_in_its_turn():
    """A reader on a machine with room for one takes every slot: it waits until the reader running ends, one
    that came after it does not overtake it through the free slot, and when its wait runs out the one behind it
    gets that slot at once."""
    slots = Slots(2)

    async def scenario() -> list[str]:
        order: list[str] = []
        assert await slots.take(0)  # a reader running

        async def taker(name: str, seconds: float, count: int) -> None:
            got = await slots.take(seconds, count)
            order.append(name if got else f"{name} gave up")

        alone = asyncio.create_task(taker("alone", 0.3, 2))
        await asyncio.sleep(0.05)
        behind = asyncio.create_task(taker("behind", 5, 1))
        await asyncio.sleep(0.1)
        assert order == [] and slots.taken == 1  # one slot free, and nobody overtook the reader that runs alone
        await asyncio.wait_for(asyncio.gather(alone, behind), 5)
        assert slots.taken == 2  # the running reader's and the one behind's
        slots.give(2)
        assert await slots.take(0, 2)  # all free again: one that must run alone gets both at once
        slots.give(2)
        return order

    assert asyncio.run(scenario()) == ["alone gave up", "behind"]
    assert slots.taken == 0
