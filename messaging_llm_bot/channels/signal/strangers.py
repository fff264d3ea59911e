"""Strangers: a sender not in ``signal.allowed`` is told their own id once, and nothing else happens.

Nothing of theirs is stored in the inbox or reaches the model; who was told is kept in
``state/signal/refused.log`` so a restart does not tell them again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable

from assistant_framework.config.settings import SignalSettings
from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.signal.settings import SignalMessage, addressed_to_bot, refusal_text
from messaging_llm_bot.conversation.pairing import Pairing

log = logging.getLogger(__name__)

REFUSED_LOG = "state/signal/refused.log"


class Strangers:
    """Answers a stranger once (their id, so the owner can allow them), in a group only when addressed."""

    def __init__(
        self,
        workspace: Workspace,
        settings: Callable[[], SignalSettings],
        say: Callable[[SignalMessage, str], Awaitable[None]],
        pairing: Pairing | None = None,
    ) -> None:
        self.workspace = workspace
        #: A stranger's code in a direct chat (conversation/pairing.py); None: told their id once.
        self.pairing = pairing
        self._settings = settings
        self._say = say
        self._refused: set[str] = set()

    async def load(self) -> None:
        """Read who was told before (at start)."""
        self._refused = set(await asyncio.to_thread(self._load_refused))

    def _load_refused(self) -> list[str]:
        return [ln.strip() for ln in self.workspace.read_text(REFUSED_LOG, default="").splitlines() if ln.strip()]

    async def refuse(self, msg: SignalMessage) -> None:
        """Tell the stranger behind ``msg`` their id, once; a group message not addressed to the bot gets nothing."""
        who = msg.uuid or msg.number or "?"
        # A stranger is told only when they address the bot, whatever signal.group_mode says.
        mentioned_only = dataclasses.replace(self._settings(), group_mode="mention")
        if msg.group_id is not None and not addressed_to_bot(msg, mentioned_only):
            return  # a group conversation not addressed to the bot: stay quiet
        if self.pairing is not None and msg.group_id is None:
            answer = await asyncio.to_thread(self.pairing.stranger, "signal", msg.number or msg.uuid or "")
            if answer is not None:  # pairing is on: a code (once an hour), a welcome, or nothing
                if answer:
                    await self._say(msg, answer)
                return
        if who in self._refused:
            log.info("signal: ignored %s again (not in signal.allowed; already told)", who)
            return
        log.info("signal: refused %s (not in signal.allowed)", " / ".join(x for x in (msg.number, msg.uuid) if x))
        self._refused.add(who)
        try:
            await asyncio.to_thread(self.workspace.append_line, REFUSED_LOG, who)
        except OSError as err:
            log.warning("signal: could not remember the refusal of %s: %s", who, err)
        await self._say(msg, refusal_text(msg))
