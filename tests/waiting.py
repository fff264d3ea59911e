"""Waiting on a condition, never on a sleep: the one poll loop the tests share."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from typing import Any, Callable

#: Between two looks: at least this long, and ``POLL_SHARE`` times what the last look took, at most ``POLL_MAX``.
POLL_MIN, POLL_SHARE, POLL_MAX = 0.01, 4.0, 0.1

#: How often the harnesses' channels (Telegram, Signal) read the reminder store: the product's 30 s
#: (conversation/reminders.py: POLL_SECONDS) would be waited out by every test of a reminder added while the bot
#: runs, or of one tried again at the next poll.
REMINDER_POLL_SECONDS = 0.1


def wait_until(predicate: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate`` until true; AssertionError naming ``what`` when ``timeout`` seconds pass first.

    A cheap look (a fake's list, a file) is repeated every 10 ms; a dear one (an HTTP request to Synapse, a
    whole log read) waits four times its own cost, at most 0.1 s: polling a real server flat out took the
    CPU the bot under test needed on a loaded machine, and answered no sooner."""
    deadline = time.monotonic() + timeout
    while True:
        began = time.monotonic()
        if predicate():
            return
        now = time.monotonic()
        if now > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(min(POLL_MAX, max(POLL_MIN, POLL_SHARE * (now - began))))


def held_until(holds: Mapping[int, Callable[[], Any]], timeout: float = 20.0) -> Callable[[int], None]:
    """A FakeChatServer stream's ``chunk_gate``: before the piece of each index in ``holds``, wait until its
    condition is true (a platform shows the answer so far), at most ``timeout`` seconds; then the stream goes on
    and the test's own assertion says what was not shown. A stream paced by what is shown, not by sleeps."""

    def gate(index: int) -> None:
        if index in holds:
            with contextlib.suppress(AssertionError):
                wait_until(holds[index], timeout, f"the stream's hold before piece {index}")

    return gate


def for_load(seconds: float) -> float:
    """``seconds`` of a slow machine's real work (a bot process starting: imports, the workspace, the model
    check), grown with the load average per CPU as tests/tiers.py grows its per-test bound: at load 20 on 2
    cores a start of 2 s idle took over 30 s. Never for a wait on an event a race may lose."""
    return seconds * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def more_reminder_polls(runtime: Any, count: int = 2, timeout: float = 10.0) -> None:
    """Return once the reminder scheduler of ``runtime``'s process (conversation/job_router.py) has read the
    store ``count`` more times: what it would do at every poll (a reminder sent again) has had its chances."""
    from messaging_llm_bot.conversation.job_router import job_router

    reminders = job_router(runtime).reminders
    assert reminders is not None, "no channel of this runtime has joined the scheduler"
    target = reminders.polls + count
    wait_until(lambda: reminders.polls >= target, timeout, f"{count} more reminder polls")
