"""Answer a job run's inbox item in the owner's Telegram chat (frontends/job_runs.py has the rest).

A ``message`` job's text is the reply; a ``prompt`` job's reply comes from a turn in the owner's private
chat with the owner's policy and no confirmation (nobody is there to press a button: a call the policy
asks about is refused), traced as a job turn. The reply is recorded, then delivered through the ledger,
so a crash anywhere resumes it and it arrives once.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import telegram

from assistant_framework.inbox import InboxItem
from messaging_llm_bot.frontends.job_runs import (
    JobRun,
    finish_run,
    make_job_reply,
    paused_notice,
)
from messaging_llm_bot.frontends.telegram.send import TelegramDeliveryError, refused_for_good, send_markdown, topic_gone
from messaging_llm_bot.frontends.telegram.settings import chat_of, topic_in

if TYPE_CHECKING:
    from messaging_llm_bot.frontends.telegram.turn import TurnRunner

log = logging.getLogger(__name__)


async def answer_job(runner: TurnRunner, bot: telegram.Bot, item: InboxItem) -> None:
    """Make and deliver one job run, record it in jobs/runs.jsonl, complete the item."""
    run = JobRun.of(item)
    workspace = runner.runtime.workspace
    owner = runner.settings.owner_id
    if run is None or owner is None:
        log.warning("jobs: %s cannot run (no owner chat or an unreadable item); dropped", item.item_id)
        await asyncio.to_thread(runner.inbox.complete, item.item_id)
        return
    chat_id = chat_of(item.conversation_id)
    topic = topic_in(item.conversation_id, chat_id)  # made in a topic of the owner's chat: delivered there
    started = datetime.now(timezone.utc)
    ok, error, outcome = True, None, None
    try:
        made = await make_job_reply(
            runner.runtime, runner.pool, runner.inbox, run, item, started, chat_id=chat_id, user_id=owner
        )
        ok, error, outcome = made.ok, made.error, made.outcome
        if made.text is not None:
            try:
                await runner._deliver(bot, item, chat_id, made.text, None, None, topic)
            except TelegramDeliveryError as err:
                if topic is None or not topic_gone(err):
                    raise
                log.warning("jobs: run %s for topic %s goes to the chat's General: %s", run.run_id, topic, err.cause)
                await runner._deliver(bot, item, chat_id, made.text, None, None)
    except TelegramDeliveryError as err:
        if not refused_for_good(err.cause) and isinstance(err.cause, telegram.error.NetworkError):
            log.warning("jobs: %s not delivered yet (%s); it is sent again at the next look", run.run_id, err)
            return  # stays in the inbox: the scheduler offers it again
        ok, error = False, f"Telegram refused it: {err.cause}"
    except Exception as exc:  # noqa: BLE001 - recorded as a failed run; three in a row pause the job
        log.exception("jobs: run %s failed", run.run_id)
        ok, error = False, f"{type(exc).__name__}: {exc}"
    message_ids = [item.parts[index] for index in sorted(item.parts)]
    paused_now = await asyncio.to_thread(
        finish_run, workspace, run, started=started, ok=ok, message_ids=message_ids, error=error, outcome=outcome
    )
    if paused_now:
        try:
            await send_markdown(bot, owner, paused_notice(run, error))
        except (TelegramDeliveryError, telegram.error.TelegramError) as err:
            log.warning("jobs: could not tell the owner that job %s is paused: %s", run.job_id, err)
    await asyncio.to_thread(runner.inbox.complete, item.item_id)
