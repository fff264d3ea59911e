"""Answer a job run's inbox item in the owner's Signal chat (conversation/job_answer.py has the rest).

As on Telegram (telegram/job_turn.py): a ``message`` job's text is the reply, a ``prompt`` job's turn in
the owner's direct chat makes it (the owner's policy, no confirmation, traced as a job turn); the reply
is recorded, then delivered through the ledger, so it arrives once; the run gets its line.
"""

from __future__ import annotations

import logging
from typing import Protocol

from assistant_framework.inbox import Inbox, InboxItem
from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.send import send_parts
from messaging_llm_bot.channels.signal.settings import SignalMessage, chat_of_conversation
from messaging_llm_bot.conversation.job_answer import answer_job_run
from messaging_llm_bot.conversation.job_runs import JobRun
from messaging_llm_bot.conversation.pool import TurnPool
from messaging_llm_bot.conversation.runtime import Runtime

log = logging.getLogger(__name__)


class Delivery(Protocol):
    """What a job run uses of the turn runner (signal/turn.py): its parts and its public delivery path."""

    runtime: Runtime
    inbox: Inbox
    pool: TurnPool
    client: SignalClient

    async def deliver(self, item: InboxItem, chat: str, reply: str, quote: SignalMessage | None) -> bool: ...


async def answer_job(runner: Delivery, item: InboxItem) -> None:
    """Make and deliver one job run, record it in jobs/runs.jsonl, complete the item."""
    chat = chat_of_conversation(item.conversation_id)

    async def deliver(text: str) -> bool:
        return await runner.deliver(item, chat, text, None)

    async def tell(text: str) -> None:
        try:
            await send_parts(runner.client, chat, text)
        except (SignalRpcError, SignalUnavailable) as err:
            run = JobRun.of(item)
            job = run.job_id if run is not None else item.item_id
            log.warning("jobs: could not tell the owner that job %s is paused: %s", job, err)

    await answer_job_run(
        runner.runtime,
        runner.pool,
        runner.inbox,
        item,
        chat_id=item.conversation_id,
        user_id=chat,
        deliver=deliver,
        tell=tell,
    )
