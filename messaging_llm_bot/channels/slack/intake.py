"""What comes in through the Events API, in order for each event: the allowlist first (a stranger gets a pairing
code in their DM at most once an hour, or their user id once with pairing off; nothing of theirs is stored or
reaches the model; in a channel they get nothing), the answer to an open yes/no question, then the durable inbox
(the ``event_id`` taken once: Slack sends an event again, with ``X-Slack-Retry-Num``, until it heard 200 within
three seconds); then the message joins the sender's running turn by the busy mode (conversation/busy.py), or a
turn in the conversation's queue. A slash command (slash.py) goes through the same allowlist to the shared command
path (``command``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from assistant_framework.config.settings import SlackSettings
from messaging_llm_bot.channels.contract import Address
from messaging_llm_bot.channels.slack.buttons import press_of
from messaging_llm_bot.channels.slack.channel import SlackChannel, question_key
from messaging_llm_bot.channels.slack.message import SlackMessage, message_of_event
from messaging_llm_bot.channels.slack.slash import slash_of
from messaging_llm_bot.channels.slack.turn import SlackTurns, joinable
from messaging_llm_bot.conversation.intake import Arrival
from messaging_llm_bot.conversation.service import ChannelHost
from messaging_llm_bot.conversation.strangers import Strangers
from messaging_llm_bot.conversation.strangers import refusal_text as not_allowed

log = logging.getLogger(__name__)


class SlackIntakeHost(ChannelHost, Protocol):
    """What the intake uses of the running service (service.py)."""

    channel: SlackChannel
    turns: SlackTurns
    bot_user: str

    @property
    def owner_dm(self) -> str: ...

    @property
    def config(self) -> SlackSettings: ...


class SlackIntake:
    def __init__(self, host: SlackIntakeHost) -> None:
        self.host = host
        # A pairing code at most once an hour; with pairing off, their user id once, ever (loaded at the start).
        self.strangers = Strangers.told_once(host.runtime, "slack")
        self.intake = host.channel_intake(host.turns)

    async def take(self, payload: Any) -> bool:
        """The message of a signed event; False when it could not be stored (Slack sends it again)."""
        msg = message_of_event(payload, self.host.bot_user)
        return True if msg is None else await self.on_message(msg)

    async def act(self, payload: Any) -> bool:
        """A signed interactive payload: a button pressed on a question (buttons.py); only the owner's counts."""
        press = press_of(payload)
        if press is None:
            log.info("slack: an interactive payload that is no question's button; passed over")
        elif not self.host.config.is_owner(press.user):
            log.warning("slack: a button press by %s ignored: only the owner answers a question", press.user)
        elif not self.host.channel.press(press):
            log.info("slack: a button press on a question no longer open; passed over")
        return True  # nothing to store: Slack need not send it again

    async def command(self, fields: Mapping[str, object]) -> None:
        """A signed slash command (slash.py), after its acknowledgement: the allowlist first, then the shared command
        path in the chat it was typed in (conversation/intake.py: ``/stop`` at once, the rest in the chat's order),
        answered there; the owner-only ones only in the owner's DM."""
        host = self.host
        slash = slash_of(fields)
        if slash is None:
            log.info("slack: a slash command without its command, user or channel; passed over")
            return
        to = Address(slash.channel)
        say = functools.partial(host.turns.say, to)
        if not host.config.allows(slash.user):
            refusal = not_allowed(f"Your Slack user id is {slash.user}", "slack.allowed")
            await self.strangers.answer(slash.user, refusal, say, private=slash.direct, addressed=True)
            return
        owner = host.config.is_owner(slash.user)
        # The owner's data only in their DM with the bot (a DM with someone else is a D... channel too).
        owner_data = owner and slash.direct and slash.channel == (host.owner_dm or slash.channel)
        decline = functools.partial(host.channel.questions.decline_all, question_key(to))
        await self.intake.command(
            slash.line, slash.conversation, say, owner=owner, owner_data=owner_data, decline=decline
        )

    async def on_message(self, msg: SlackMessage) -> bool:
        host = self.host
        config = host.config
        to = Address(msg.channel, msg.reply_thread)
        if not config.allows(msg.user):
            await self.strangers.answer(
                msg.user,
                not_allowed(f"Your Slack user id is {msg.user}", "slack.allowed"),
                lambda text: host.turns.say(to, text),
                private=msg.direct,
                addressed=True,
            )
            return True
        if await self.intake.came_before(msg.event_id):  # Slack's retry of an event taken (X-Slack-Retry-Num)
            return True
        owner = config.is_owner(msg.user)
        if owner and msg.direct and host.channel.resolve(question_key(to), msg.text):
            await self.intake.handled_now(msg.event_id)  # its retry is no new message
            return True  # the answer to an open yes/no question, not a new message
        arrival = Arrival(
            msg.event_id, msg.conversation, msg.to_payload(), msg.user, owner, msg.text, msg.ts, joinable(msg)
        )
        # False: it could not be stored (Slack sends the event again)
        return await self.intake.take(arrival, lambda text: host.turns.say(to, text))
