"""Answer a job run's inbox item in the owner's Signal chat (frontends/job_runs.py has the rest).

As on Telegram (telegram/job_turn.py): a ``message`` job's text is the reply, a ``prompt`` job's turn in
the owner's direct chat makes it (the owner's policy, no confirmation, traced as a job turn); the reply
is recorded, then delivered through the ledger, so it arrives once; the run gets its line.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from assistant_framework.inbox import InboxItem
from messaging_llm_bot.frontends.job_runs import (
    JobRun,
    finish_run,
    make_job_reply,
    paused_notice,
)
from messaging_llm_bot.frontends.signal.client import SignalRpcError, SignalUnavailable
from messaging_llm_bot.frontends.signal.send import send_parts
from messaging_llm_bot.frontends.signal.settings import chat_of_conversation

if TYPE_CHECKING:
    from messaging_llm_bot.frontends.signal.turn import TurnRunner

log = logging.getLogger(__name__)


async def answer_job(runner: TurnRunner, item: InboxItem) -> None:
    """Make and deliver one job run, record it in jobs/runs.jsonl, complete the item."""
    run = JobRun.of(item)
    workspace = runner.runtime.workspace
    if run is None:
        log.warning("jobs: %s holds no job run; dropped", item.item_id)
        await asyncio.to_thread(runner.inbox.complete, item.item_id)
        return
    chat = chat_of_conversation(item.conversation_id)
    started = datetime.now(timezone.utc)
    ok, error, outcome = True, None, None
    try:
        made = await make_job_reply(
            runner.runtime, runner.pool, runner.inbox, run, item, started, chat_id=item.conversation_id, user_id=chat
        )
        ok, error, outcome = made.ok, made.error, made.outcome
        if made.text is not None and not await runner._deliver(item, chat, made.text, None):
            return  # stopping with the reply undelivered: it stays in the inbox for the next start
    except Exception as exc:  # noqa: BLE001 - recorded as a failed run; three in a row pause the job
        log.exception("jobs: run %s failed", run.run_id)
        ok, error = False, f"{type(exc).__name__}: {exc}"
    message_ids = [item.parts[index] for index in sorted(item.parts)]
    paused_now = await asyncio.to_thread(
        finish_run, workspace, run, started=started, ok=ok, message_ids=message_ids, error=error, outcome=outcome
    )
    if paused_now:
        try:
            await send_parts(runner.client, chat, paused_notice(run, error))
        except (SignalRpcError, SignalUnavailable) as err:
            log.warning("jobs: could not tell the owner that job %s is paused: %s", run.job_id, err)
    await asyncio.to_thread(runner.inbox.complete, item.item_id)
