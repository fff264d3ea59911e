"""Asking the owner on Signal to confirm a skill call the policy marks ``ask``.

Signal has no buttons: the bot asks in the owner's direct chat and the owner's next message there
("yes" / "no") answers it. That message bypasses the chat's queue (the turn waiting for it holds
the queue). A call that asks only because outside content is in view may also be answered "chat":
allowed for this conversation (``ALLOW_CONVERSATION``). No answer within the timeout means no.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Callable

from messaging_llm_bot.agent.guard import ALLOW_CONVERSATION
from messaging_llm_bot.channels.signal.client import SignalClient, SignalRpcError, SignalUnavailable
from messaging_llm_bot.channels.signal.settings import recipient_params

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_SECONDS = 300.0
YES = {"yes", "y", "ok", "confirm", "ja", "oui"}
NO = {"no", "n", "cancel", "decline", "nein", "non"}
#: "Allow for this conversation" (only where the question offers it; elsewhere it confirms this call).
CHAT = {"chat", "always", "allow", "allow for this conversation"}


def question_text(request: dict[str, Any]) -> str:
    """The question shown to the owner: which skill, what it would do, and why it asks."""
    args = json.dumps(request.get("args") or {}, ensure_ascii=False)
    if len(args) > 600:
        args = args[:600] + "…"
    text = (
        f"Confirm this action?\n\nskill: {request.get('skill')}\nargs: {args}\n\n"
        f"Why I ask: {request.get('reason', 'the policy asks for confirmation')}.\n\n"
    )
    if request.get("allow_conversation"):
        return text + (
            "Reply yes to confirm, no to decline, or chat to allow it for this conversation (this skill's calls "
            "then run without asking while the outside content named above is all that is in view; new outside "
            "content asks again, /reset ends it)."
        )
    return text + "Reply yes to confirm or no to decline."


class Approvals:
    """At most one open question per chat."""

    def __init__(self, client: SignalClient, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.client = client
        self.timeout_seconds = timeout_seconds
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._offers: set[str] = set()  # chats whose open question offers "allow for this conversation"

    def approver(self, chat: str, loop: asyncio.AbstractEventLoop) -> Callable[[dict[str, Any]], bool | str]:
        """A blocking callback for the agent's worker thread."""

        def approve(request: dict[str, Any]) -> bool | str:
            future = asyncio.run_coroutine_threadsafe(self.ask(chat, request), loop)
            try:
                return future.result(self.timeout_seconds + 30)
            except Exception:  # noqa: BLE001 - fail closed
                log.exception("signal: confirmation in %s failed", chat)
                return False

        return approve

    async def ask(self, chat: str, request: dict[str, Any]) -> bool | str:
        """Send the question and wait for the owner's yes/no/chat (False on timeout or error)."""
        future = asyncio.get_running_loop().create_future()
        self._pending[chat] = future
        if request.get("allow_conversation"):
            self._offers.add(chat)
        try:
            await self.client.rpc("send", {**recipient_params(chat), "message": question_text(request)})
            return await asyncio.wait_for(future, self.timeout_seconds)
        except asyncio.TimeoutError:
            await self._say(chat, "No answer in time: not done.")
            return False
        except (SignalRpcError, SignalUnavailable) as err:
            log.warning("signal: could not ask for confirmation in %s: %s", chat, err)
            return False
        finally:
            self._pending.pop(chat, None)
            self._offers.discard(chat)

    def resolve(self, chat: str, text: str) -> bool:
        """Answer an open question of ``chat`` with ``text``; True when the message was that answer."""
        future = self._pending.get(chat)
        word = text.strip().strip(".!").lower()
        if future is None or future.done() or word not in YES | NO | CHAT:
            return False
        if word in CHAT:
            future.set_result(ALLOW_CONVERSATION if chat in self._offers else True)
        else:
            future.set_result(word in YES)
        return True

    async def _say(self, chat: str, text: str) -> None:
        try:
            await self.client.rpc("send", {**recipient_params(chat), "message": text})
        except (SignalRpcError, SignalUnavailable):
            pass
