"""Albums: photos (or files) sent together that the platform delivers as one message each, sharing a group id
(Telegram's ``media_group_id``); they are answered as one turn with all their parts. The channel says which
album a message belongs to (``key``) and what identifies it (``ident``); the waiting and the grouping are here.

Each part is stored in the durable inbox on its own, as any message, before the platform is told it arrived,
and noted here as it is handed on (``arrived``). The first part's turn waits for the rest: until none came for
``ALBUM_QUIET_SECONDS``, the album holds ``MAX_ALBUM_PARTS`` or ``ALBUM_MAX_WAIT_SECONDS`` passed since its first
part; the parts that came later than that make a turn of their own. The other parts' turns, which wait behind
the first in their chat's queue, then find their part answered (``taken``). A stop before the reply is recorded
leaves every part in the inbox; the replay at the next start notes the stored parts as ``left`` and answers an
album's as one turn again, without waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from messaging_llm_bot.conversation.images import MAX_IMAGES
from messaging_llm_bot.conversation.waits import within

#: How long the first part's turn waits for another part after the last one came.
ALBUM_QUIET_SECONDS = 1.0
#: The longest an album is waited for, from its first part.
ALBUM_MAX_WAIT_SECONDS = 5.0
#: Parts of one turn (Telegram's own limit on an album: 10).
MAX_ALBUM_PARTS = MAX_IMAGES
#: Parts noted as answered by their album's turn whose own handler has not run yet (a bound on memory).
MAX_TAKEN = 10_000

Part = TypeVar("Part")


@dataclass
class _Album(Generic[Part]):
    first: float
    last: float
    parts: list[Part] = field(default_factory=list)
    grew: asyncio.Event = field(default_factory=asyncio.Event)


class Albums(Generic[Part]):
    """The albums being collected (event loop only). ``key``: the album a part belongs to (unique across
    chats), or None for a message that is no album's part; ``ident``: what identifies a part."""

    def __init__(
        self,
        key: Callable[[Part], str | None],
        ident: Callable[[Part], Hashable],
        quiet: float = ALBUM_QUIET_SECONDS,
        max_wait: float = ALBUM_MAX_WAIT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.key, self.ident = key, ident
        self.quiet, self.max_wait, self._clock = quiet, max_wait, clock
        self._open: dict[str, _Album[Part]] = {}
        self._taken: dict[Hashable, None] = {}  # parts answered in an earlier part's turn (insertion order)
        self._answering: dict[Hashable, list[Part]] = {}  # a part whose turn runs -> the rest of its album

    def arrived(self, part: Part, *, left: bool = False) -> None:
        """Note an album part as it arrives, before the turns of its chat (queued in order) run. ``left``: a part
        the last run stored: its album is answered with the parts it has, not waited for."""
        key = self.key(part)
        if key is None:
            return
        now = -math.inf if left else self._clock()
        album = self._open.get(key)
        if album is None or len(album.parts) >= MAX_ALBUM_PARTS:
            album = self._open[key] = _Album(first=now, last=now)
        if all(self.ident(one) != self.ident(part) for one in album.parts):
            album.parts.append(part)
            album.last = now
            album.grew.set()

    def taken(self, part: Part) -> bool:
        """True (once) when an earlier part's turn answered this part with its album."""
        return self._taken.pop(self.ident(part), False) is None

    async def gather(self, part: Part) -> list[Part]:
        """The parts to answer as one turn with ``part`` (first): itself alone when it is no album part; else
        its album's parts, once the album is complete, full or waited for long enough."""
        key = self.key(part)
        if key is None:
            return [part]
        self.arrived(part)  # a part not noted before
        album = self._open[key]
        while len(album.parts) < MAX_ALBUM_PARTS:
            wait = min(album.last + self.quiet, album.first + self.max_wait) - self._clock()
            if wait <= 0:
                break
            album.grew.clear()
            # ``within``: a part that comes as the turn is cancelled (the stop) does not keep the turn waiting.
            with contextlib.suppress(TimeoutError):
                await within(album.grew.wait(), wait)
        if self._open.get(key) is album:
            del self._open[key]  # a part that comes now starts an album of its own
        others = [one for one in album.parts if self.ident(one) != self.ident(part)]
        for one in others:
            self._taken[self.ident(one)] = None
        while len(self._taken) > MAX_TAKEN:
            del self._taken[next(iter(self._taken))]
        return [part, *others]

    async def answer(self, part: Part, answer: Callable[[], Awaitable[None]]) -> None:
        """``answer()`` ``part`` with the rest of its album (``rest`` while it runs: the turn reads them and
        completes them with it); a part an earlier part's turn answered is passed over."""
        if self.taken(part):
            return
        _first, *rest = await self.gather(part)
        self._answering[self.ident(part)] = rest
        try:
            await answer()
        finally:
            self._answering.pop(self.ident(part), None)

    def rest(self, part: Part) -> list[Part]:
        """The rest of the album ``part``'s turn answers (``answer``), or none."""
        return self._answering.get(self.ident(part), [])
