"""One job run's inbox item answered, the same on every frontend: the reply made once
(``job_runs.make_job_reply``), handed to the frontend's ``deliver``, the run's line written, the owner
told once when the job is paused, the item completed."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from assistant_framework.inbox import Inbox, InboxItem
from messaging_llm_bot.conversation.job_runs import JobRun, finish_run, make_job_reply, paused_notice
from messaging_llm_bot.conversation.pool import TurnPool
from messaging_llm_bot.conversation.reminders import DeliveryRefused
from messaging_llm_bot.conversation.runtime import Runtime

log = logging.getLogger(__name__)


#: Sends a run's reply; True when it arrived, False to leave the item in the inbox (the next look or start sends
#: it); raises ``DeliveryRefused`` when it never can (the run is recorded failed, with the reason).
Deliver = Callable[[str], Awaitable[bool]]
#: Tells the owner a sentence (best effort: it logs its own failure).
Tell = Callable[[str], Awaitable[None]]


async def answer_job_run(
    runtime: Runtime,
    pool: TurnPool,
    inbox: Inbox,
    item: InboxItem,
    *,
    chat_id: int | str | None,
    user_id: int | str | None,
    deliver: Deliver,
    tell: Tell,
) -> None:
    """Make and deliver one job run, record it in jobs/runs.jsonl, complete the item; an item ``deliver``
    leaves undelivered stays in the inbox (its reply recorded) for the next look or start."""
    run = JobRun.of(item)
    if run is None:
        log.warning("jobs: %s holds no job run; dropped", item.item_id)
        await asyncio.to_thread(inbox.complete, item.item_id)
        return
    started = datetime.now(UTC)
    ok, error, outcome = True, None, None
    try:
        made = await make_job_reply(runtime, pool, inbox, run, item, started, chat_id=chat_id, user_id=user_id)
        ok, error, outcome = made.ok, made.error, made.outcome
        if made.text is not None and not await deliver(made.text):
            return  # not delivered now (stopping, no connection): it stays in the inbox
    except DeliveryRefused as err:
        ok, error = False, str(err)
    except Exception as exc:  # noqa: BLE001 - recorded as a failed run; three in a row pause the job
        log.exception("jobs: run %s failed", run.run_id)
        ok, error = False, f"{type(exc).__name__}: {exc}"
    message_ids = [item.parts[index] for index in sorted(item.parts)]
    paused_now = await asyncio.to_thread(
        finish_run,
        runtime.workspace,
        run,
        started=started,
        ok=ok,
        message_ids=message_ids,
        error=error,
        outcome=outcome,
    )
    if paused_now:
        await tell(paused_notice(run, error))
    await asyncio.to_thread(inbox.complete, item.item_id)
