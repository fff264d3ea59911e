"""Telegram albums: photos (or files) sent together arrive as one update each, sharing a ``media_group_id``;
they are answered as one turn with all their parts.

Each part is stored in the durable inbox on its own, as any message, before Telegram is told it arrived. The
first part's turn waits for the rest: until none came for ``ALBUM_QUIET_SECONDS``, the album holds
``MAX_ALBUM_PARTS`` or ``ALBUM_MAX_WAIT_SECONDS`` passed since its first part; the parts that came later than
that make a turn of their own. The other parts' handlers, which wait behind the first in their chat's queue,
then find their part answered. A stop before the reply is recorded leaves every part in the inbox; the
replay at the next start answers the stored parts of an album as one turn again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from telegram import Update

from messaging_llm_bot.channels.telegram.settings import message_conversation
from messaging_llm_bot.conversation.images import MAX_IMAGES

#: How long the first part's turn waits for another part after the last one came.
ALBUM_QUIET_SECONDS = 1.0
#: The longest an album is waited for, from its first part.
ALBUM_MAX_WAIT_SECONDS = 5.0
#: Parts of one turn (Telegram's own limit on an album: 10).
MAX_ALBUM_PARTS = MAX_IMAGES
#: Parts noted as answered by their album's turn whose own handler has not run yet (a bound on memory).
MAX_TAKEN = 10_000


def album_key(update: Update) -> str | None:
    """The album an update's message belongs to (its conversation and ``media_group_id``), or None."""
    message = update.message
    if message is None or not message.media_group_id:
        return None
    return f"{message_conversation(message)}|{message.media_group_id}"


@dataclass
class _Album:
    first: float
    last: float
    parts: list[Update] = field(default_factory=list)
    grew: asyncio.Event = field(default_factory=asyncio.Event)


class Albums:
    """The albums being collected (event loop only)."""

    def __init__(
        self,
        quiet: float = ALBUM_QUIET_SECONDS,
        max_wait: float = ALBUM_MAX_WAIT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quiet, self.max_wait, self._clock = quiet, max_wait, clock
        self._open: dict[str, _Album] = {}
        self._taken: dict[int, None] = {}  # update ids answered in an earlier part's turn (insertion order)

    def arrived(self, update: Update) -> None:
        """Note an album part as it arrives, before the handlers of its chat (queued in order) run."""
        key = album_key(update)
        if key is None:
            return
        now = self._clock()
        album = self._open.get(key)
        if album is None or len(album.parts) >= MAX_ALBUM_PARTS:
            album = self._open[key] = _Album(first=now, last=now)
        if all(part.update_id != update.update_id for part in album.parts):
            album.parts.append(update)
            album.last = now
            album.grew.set()

    def dropped(self, update: Update) -> None:
        """Forget a part that will not be answered (refused by its chat's bound)."""
        key = album_key(update)
        album = self._open.get(key) if key is not None else None
        if key is not None and album is not None:
            album.parts = [p for p in album.parts if p.update_id != update.update_id]
            if not album.parts:
                del self._open[key]

    def taken(self, update: Update) -> bool:
        """True (once) when an earlier part's turn answered this update with its album."""
        return self._taken.pop(update.update_id, False) is None

    async def gather(self, update: Update) -> list[Update]:
        """The updates to answer as one turn with ``update`` (first): itself alone when it is no album part;
        else its album's parts, once the album is complete, full or waited for long enough."""
        key = album_key(update)
        if key is None:
            return [update]
        self.arrived(update)  # a part no intake noted (a direct process_update)
        album = self._open[key]
        while len(album.parts) < MAX_ALBUM_PARTS:
            wait = min(album.last + self.quiet, album.first + self.max_wait) - self._clock()
            if wait <= 0:
                break
            album.grew.clear()
            try:
                await asyncio.wait_for(album.grew.wait(), wait)
            except TimeoutError:
                pass
        if self._open.get(key) is album:
            del self._open[key]  # a part that comes now starts an album of its own
        others = [p for p in album.parts if p.update_id != update.update_id]
        for part in others:
            self._taken[part.update_id] = None
        while len(self._taken) > MAX_TAKEN:
            del self._taken[next(iter(self._taken))]
        return [update, *others]
