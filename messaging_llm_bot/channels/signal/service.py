"""The Signal bot on conversation/service.py's ChannelService, reading signal-cli's event stream until stopped
(conversation/outage.py's ``read_stream``). Each message: the allowlist first (a stranger is told their id once), the
answer to an open confirmation question, then a command or the inbox (conversation/intake.py); turn.py answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from typing import Any

from assistant_framework.config.settings import SignalSettings
from assistant_framework.config.settings.chat import signal_id
from assistant_framework.inbox import Inbox
from assistant_framework.jobs import Job
from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.identity import Identities
from messaging_llm_bot.channels.signal.send import SignalOut
from messaging_llm_bot.channels.signal.settings import (
    PREFIX,
    SignalMessage,
    addressed_to_bot,
    is_bot,
    parse_event,
)
from messaging_llm_bot.channels.signal.turn import SignalTurns, joinable
from messaging_llm_bot.conversation.approvals import ReplyApprovals
from messaging_llm_bot.conversation.intake import Arrival, ChannelIntake
from messaging_llm_bot.conversation.notices import ChannelNotices
from messaging_llm_bot.conversation.outage import Outage, read_stream
from messaging_llm_bot.conversation.service import ChannelService
from messaging_llm_bot.conversation.strangers import Strangers
from messaging_llm_bot.conversation.strangers import refusal_text as not_allowed

log = logging.getLogger(__name__)


class SignalService(ChannelService):
    """One running Signal bot: ``run()`` blocks until stopped and returns an exit code; ``stop()`` is thread-safe."""

    NAME, TITLE = "signal", "the Signal frontend"
    LOCK_FILE, LOCK_WHO = "state/signal.lock", "signal: another Signal bot"

    # The parts made when the service starts (``serve``); the event handlers run only after that.
    client: SignalClient
    inbox: Inbox
    turns: SignalTurns
    intake: ChannelIntake
    notices: ChannelNotices
    outage: Outage  # the signal-cli daemon cannot be reached: said once, by the event stream or a send
    identities: Identities
    approvals: ReplyApprovals
    strangers: Strangers
    account_uuid: str | None = None  # the account's own UUID: a mention or quote by UUID only is the bot
    _uuid_asked = False  # signal-cli answered the question (with a UUID or without)

    def job_conversation(self, job: Job) -> str | None:
        """The owner's direct chat, never another chat whatever the row says (conversation/job_router.py)."""
        owner = self.settings.owner_id
        return None if owner is None else PREFIX + owner

    @property
    def settings(self) -> SignalSettings:
        """The current ``signal`` record (a ``/reload`` changes it: assistant_framework/config/reloadable.py)."""
        return self.runtime.settings.signal

    def problem(self) -> str | None:
        if not self.settings.account:
            return "signal: no account: set signal.account to the bot's number (E.164, e.g. +4915112345678)"
        return None

    async def serve(self) -> None:
        workspace = self.runtime.workspace
        self.outage = Outage("signal", f"the signal-cli daemon at {self.settings.base_url}", log)
        self.client = client = SignalClient(self.settings.base_url, self.settings.account)
        self.inbox = inbox = await asyncio.to_thread(Inbox, workspace)
        self.identities = await asyncio.to_thread(Identities, workspace)
        out = SignalOut(client, self.outage)
        self.approvals = ReplyApprovals("signal", out.ask)
        self.turns = self.shutdown.turns = SignalTurns(self.runtime, inbox, out, self.identities, self.approvals)
        await self.learn_account_uuid()
        self.strangers = Strangers.told_once(self.runtime, "signal", "state/signal/refused.log")  # kept across restarts
        await self.strangers.load()
        loop = asyncio.get_running_loop()
        self.notices = notices = self.owner_notices(self.turns.send_to, lambda: self.settings.owner_id)
        self.intake = self.channel_intake(
            self.turns, hold=True, queue_of=lambda conversation_id: conversation_id.removeprefix(PREFIX)
        )
        how = "Send it a message to see your Signal id, then add it with"
        self.warn_if_no_one_allowed(self.settings.allowed, "signal.allowed", how, '["+NUMBER"]')
        log.info(
            "signal: serving %s through signal-cli at %s for %s",
            self.settings.account,
            self.settings.base_url,
            list(self.settings.allowed_ids),
        )
        self.intake.replay(PREFIX, self.turns.sent_by_owner)  # job runs, then messages oldest first (never refused)
        await self.join_jobs_sending(
            notices,
            inbox,
            owner_conversation=self.job_conversation,
            start=self.intake.start_job,
            morning_digest=self.settings.morning_digest,
            ask_owner=self.approvals.owner_approver(lambda: self.settings.owner_id, loop),
        )
        self.reading(self.consume())

    async def learn_account_uuid(self) -> None:
        """The account's own UUID (ACI): signal-cli's ``getUserStatus`` for its number, asked at start and again
        before each event while the daemon cannot be reached; unknown (a mention by number still counts) when
        signal-cli cannot say."""
        if self._uuid_asked:
            return
        try:
            answer = await self.client.rpc("getUserStatus", {"recipient": [self.settings.account]})
        except SignalUnavailable as err:
            self.outage.failed(err)  # logged once per outage, with the event stream's
            return
        except SignalRpcError as err:
            log.warning("signal: signal-cli did not give the account's UUID (%s)", err)
            answer = None
        self._uuid_asked = True
        statuses = answer if isinstance(answer, list) else []  # one recipient asked: its status
        uuid = next(
            (s["uuid"] for s in statuses if isinstance(s, dict) and isinstance(s.get("uuid"), str) and s["uuid"]), ""
        )
        if not uuid:
            log.warning("signal: the account's UUID is unknown: a mention or quote by UUID only is not seen")
        self.account_uuid = self.turns.account_uuid = signal_id(uuid) if uuid else None

    async def close(self) -> None:
        if hasattr(self, "client"):  # made at the start
            await self.client.close()

    # -- the event stream --------------------------------------------------------------------------------------

    async def consume(self) -> None:
        """Read events until stopped (conversation/outage.py's ``read_stream``: an outage said once, backoff)."""
        stream = f"the signal-cli event stream at {self.settings.base_url}"
        await read_stream(self.client.events, self.on_event, self.outage, SignalUnavailable, self, stream)

    async def on_event(self, obj: dict[str, Any]) -> None:
        """One event of the stream: gate it, then a command, an approval's answer, or a stored message."""
        await self.learn_account_uuid()  # a no-op once signal-cli answered; before, the daemon was down
        msg = parse_event(obj)
        if msg is None or is_bot(msg.number, msg.uuid, self.settings.account, self.account_uuid):
            return
        sender = self.identities.judge(msg, self.settings)
        if not sender.allowed:
            if sender.mismatch is None:  # a number that belongs to another account gets no answer at all
                await self._refuse(msg)
            return
        if msg.number and msg.uuid and self.identities.pinned(msg.number) is None:
            await asyncio.to_thread(self.identities.pin, msg, sender)  # the number's first message with an account
        if sender.owner_chat(msg) and msg.kind() == "text" and self.approvals.resolve(msg.chat, msg.text):
            return  # the answer to an open confirmation question, not a new message
        if not addressed_to_bot(msg, self.settings, self.account_uuid):
            return
        arrival = Arrival(
            msg.source_id,
            msg.conversation_id,
            obj,
            msg.sender,
            sender.owner,
            msg.text,
            msg.timestamp,
            joinable(msg),
            queue=msg.chat,
        )
        answer = functools.partial(self.turns.say_to, msg)
        decline = functools.partial(self.approvals.resolve, msg.chat, "no")  # an open question: declined
        command = msg.kind() == "text" and msg.text.startswith("/")
        owner_data = sender.owner_chat(msg)
        await self.intake.message(
            arrival, answer, command=command, owner_data=owner_data, decline=decline, held_in_order=True
        )

    async def _refuse(self, msg: SignalMessage) -> None:
        """Tell a stranger their ids once, so the owner can allow them (conversation/strangers.py); in a group only
        when they address the bot, whatever signal.group_mode says."""
        addressed = addressed_to_bot(msg, dataclasses.replace(self.settings, group_mode="mention"), self.account_uuid)
        ids = " / ".join(x for x in (msg.number, msg.uuid) if x)
        refusal = not_allowed(f"Your Signal id is {ids}", "signal.allowed", this="this bot")
        who, private = msg.uuid or msg.number or "?", msg.group_id is None
        say = functools.partial(self.turns.say_to, msg)
        await self.strangers.answer(who, refusal, say, private=private, addressed=addressed, pair_as=msg.sender)
