"""Strangers, once for every channel: a sender not on the channel's allowlist is answered at most with how to
get in (a pairing code where pairing is on, else their own id, so the owner can allow them), and nothing else
happens: nothing of theirs is stored or reaches a model. The channel decides who is a stranger and whether a
group message addressed the bot (identity and addressing are the platform's); the rest is here.

How often a stranger is told is the channel's choice of ``Told``: ``ToldRecently`` (at most once a minute: a
stranger's flood must not spend the replies' send budget) or ``ToldOnce`` (once, remembered across restarts
in a file of the workspace).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.pairing import Pairing

if TYPE_CHECKING:
    from messaging_llm_bot.conversation.runtime import Runtime

log = logging.getLogger(__name__)

#: ``ToldRecently``: a stranger is told at most this often (the rest of their messages: silence).
REFUSAL_EVERY_SECONDS = 60.0
#: ``ToldRecently`` forgets the strangers told long ago past this many.
MAX_REMEMBERED = 10_000


class Told(Protocol):
    """Whether a stranger is to be told now (and noted as told); ``load`` reads who was told, at start."""

    async def first(self, who: str) -> bool: ...

    async def load(self) -> None: ...


class ToldRecently:
    """Told at most once every ``every`` seconds, kept in memory (bounded)."""

    def __init__(self, every: float = REFUSAL_EVERY_SECONDS) -> None:
        self.every = every
        self._told_at: dict[str, float] = {}  # stranger -> when last told (monotonic)

    async def load(self) -> None:
        """Nothing to read: who was told lives in memory only."""

    async def first(self, who: str) -> bool:
        now = time.monotonic()
        if now - self._told_at.get(who, float("-inf")) < self.every:
            return False
        if len(self._told_at) >= MAX_REMEMBERED:
            self._told_at = {w: t for w, t in self._told_at.items() if now - t < self.every}
        self._told_at[who] = now
        return True


class ToldOnce:
    """Told once, ever: who was told is a line of ``path`` in the workspace, read by ``load`` at start."""

    def __init__(self, workspace: Workspace, path: str) -> None:
        self.workspace, self.path = workspace, path
        self._told: set[str] = set()

    async def load(self) -> None:
        self._told = set(await asyncio.to_thread(self._read))

    def _read(self) -> list[str]:
        return [ln.strip() for ln in self.workspace.read_text(self.path, default="").splitlines() if ln.strip()]

    async def first(self, who: str) -> bool:
        if who in self._told:
            return False
        self._told.add(who)
        try:
            await asyncio.to_thread(self.workspace.append_line, self.path, who)
        except OSError as err:  # told anyway; a restart may tell them once more
            log.warning("strangers: could not remember that %s was told: %s", who, err)
        return True


def refusal_text(their_id: str, key: str, *, this: str = "this assistant") -> str:
    """The one reply a stranger gets, naming their id (``their_id``: "Your Slack user id is U1") and the config
    key the owner adds it to, so the owner can allow them."""
    return f"Sorry, you are not authorised to use {this}. {their_id}; the owner can add it to {key}."


class Strangers:
    """What a channel's strangers are told, and how often (``told``)."""

    def __init__(self, channel: str, told: Told, pairing: Pairing | None = None) -> None:
        self.channel = channel
        self.told = told
        #: A stranger's code in a one-to-one chat (conversation/pairing.py); None: told their id only.
        self.pairing = pairing

    @classmethod
    def told_once(cls, runtime: Runtime, channel: str, path: str = "") -> Strangers:
        """A channel's strangers given a pairing code at most once an hour (conversation/pairing.py), or with
        pairing off told their id once, ever: a line each in ``path`` (default
        ``state/<channel>/strangers_told.txt``), read by ``load`` at the channel's start."""
        told = ToldOnce(runtime.workspace, path or f"state/{channel}/strangers_told.txt")
        return cls(channel, told, Pairing(runtime))

    async def load(self) -> None:
        """Read who was told already (``ToldOnce``'s file), at the channel's start."""
        await self.told.load()

    async def answer(
        self,
        who: str,
        refusal: str,
        say: Callable[[str], Awaitable[None]],
        *,
        private: bool,
        addressed: bool,
        pair_as: str = "",
    ) -> None:
        """Answer the stranger ``who`` through ``say``, or not at all: a group message not addressed to the bot
        gets nothing; in a one-to-one chat with pairing on, the pairing answer (a code once an hour, a
        welcome, or nothing); else ``refusal`` (the channel's sentence naming their id), as often as ``told``
        allows. ``pair_as``: the id pairing knows them by (default ``who``)."""
        if not private and not addressed:
            return  # a group conversation not addressed to the bot: stay quiet
        if self.pairing is not None and private:
            answer = await asyncio.to_thread(self.pairing.stranger, self.channel, pair_as or who)
            if answer is not None:  # pairing is on
                if answer:
                    await say(answer)
                else:
                    log.info("%s: ignored %s again (not allowed; given a pairing code this hour)", self.channel, who)
                return
        if not await self.told.first(who):
            log.info("%s: ignored %s again (not allowed; told already)", self.channel, who)
            return
        log.info("%s: refused %s (not allowed)", self.channel, who)
        await say(refusal)
