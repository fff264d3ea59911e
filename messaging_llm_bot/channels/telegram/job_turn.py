"""Answer a job run's inbox item in the owner's Telegram chat (conversation/job_answer.py has the rest).

A ``message`` job's text is the reply; a ``prompt`` job's reply comes from a turn in the owner's private
chat with the owner's policy and no confirmation (nobody is there to press a button: a call the policy
asks about is refused), traced as a job turn. The reply is recorded, then delivered through the ledger,
so a crash anywhere resumes it and it arrives once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

import telegram

from assistant_framework.config.settings import TelegramSettings
from assistant_framework.inbox import Inbox, InboxItem
from messaging_llm_bot.channels.telegram.send import TelegramDeliveryError, refused_for_good, send_markdown, topic_gone
from messaging_llm_bot.channels.telegram.settings import chat_of, topic_in
from messaging_llm_bot.conversation.job_answer import answer_job_run
from messaging_llm_bot.conversation.pool import TurnPool
from messaging_llm_bot.conversation.progress import Progress
from messaging_llm_bot.conversation.reminders import DeliveryRefused
from messaging_llm_bot.conversation.runtime import Runtime

log = logging.getLogger(__name__)


class Delivery(Protocol):
    """What a job run uses of the turn runner (telegram/turn.py): its parts and its public delivery path."""

    runtime: Runtime
    inbox: Inbox
    pool: TurnPool

    @property
    def settings(self) -> TelegramSettings: ...

    async def deliver(
        self,
        bot: telegram.Bot,
        item: InboxItem,
        chat_id: int,
        reply: str,
        reply_to: int | None,
        progress: Progress | None,
        topic: int | None = None,
    ) -> None: ...


async def answer_job(runner: Delivery, bot: telegram.Bot, item: InboxItem) -> None:
    """Make and deliver one job run, record it in jobs/runs.jsonl, complete the item (conversation/job_answer.py);
    Telegram's part is the delivery: in the topic the job was made in (the chat's General once that topic is
    gone), left for the next look on a network error, a failed run when Telegram refuses it for good."""
    owner = runner.settings.owner
    if owner is None:
        log.warning("jobs: %s cannot run (no owner chat); dropped", item.item_id)
        await asyncio.to_thread(runner.inbox.complete, item.item_id)
        return
    chat_id = chat_of(item.conversation_id)
    topic = topic_in(item.conversation_id, chat_id)  # made in a topic of the owner's chat: delivered there

    async def deliver(text: str) -> bool:
        try:
            try:
                await runner.deliver(bot, item, chat_id, text, None, None, topic)
            except TelegramDeliveryError as err:
                if topic is None or not topic_gone(err):
                    raise
                log.warning("jobs: %s for topic %s goes to the chat's General: %s", item.item_id, topic, err.cause)
                await runner.deliver(bot, item, chat_id, text, None, None)
        except TelegramDeliveryError as err:
            if not refused_for_good(err.cause) and isinstance(err.cause, telegram.error.NetworkError):
                log.warning("jobs: %s not delivered yet (%s); it is sent again at the next look", item.item_id, err)
                return False  # stays in the inbox: the scheduler offers it again
            raise DeliveryRefused(f"Telegram refused it: {err.cause}") from None
        return True

    async def tell(text: str) -> None:
        try:
            await send_markdown(bot, owner, text)
        except (TelegramDeliveryError, telegram.error.TelegramError) as err:
            log.warning("jobs: could not tell the owner about %s: %s", item.item_id, err)

    await answer_job_run(
        runner.runtime, runner.pool, runner.inbox, item, chat_id=chat_id, user_id=owner, deliver=deliver, tell=tell
    )
