"""What the gateway never delivered, fetched through the REST API: Discord replays missed events only when a
session RESUMEs; a new session (a restart, a crash, a session Discord invalidated) starts at "now", and the
messages written in between are in the channels' history only (``GET /channels/{id}/messages?after=``).

``HistoryCursor`` keeps, per channel the bot has taken a message in, the newest message id it has handled there (stored,
answered as a command or a yes/no, refused, or passed over) and whether the channel is a DM, and the newest id
handled anywhere: ``state/discord/cursor.json``. A message held while the inbox cannot store is noted only once
stored (the messages behind it wait: none is noted before it), so a stop or a crash while it is held leaves the
cursor before it. ``catch_up`` reads each known channel's history after its cursor, and each allowed user's DM
the bot has no cursor for after the newest id handled anywhere (their first message, written while the bot was
away), oldest first, within the bounds below, and hands every message to the intake as if the gateway had
delivered it: the inbox takes a message id once, so one already stored is not answered again.

Not recoverable: a message in a guild channel the bot never took a message in; anything before the cursor file's
first note (the first start after an upgrade); more than ``MAX_MESSAGES`` messages after a channel's cursor (the
oldest are read, the rest logged as skipped); the channels beyond the ``MAX_CHANNELS`` most recent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assistant_framework.workspace import Workspace
from messaging_llm_bot.channels.contract import DeliveryError
from messaging_llm_bot.channels.discord.api import DiscordUnavailable, call

if TYPE_CHECKING:
    import discord

log = logging.getLogger(__name__)

CURSOR_FILE = "state/discord/cursor.json"
#: The most messages read after one channel's cursor (three of Discord's pages of 100).
MAX_MESSAGES = 300
#: The most channels read, the most recently active first; the file keeps no more than this either.
MAX_CHANNELS = 50


@dataclass(frozen=True)
class Mark:
    """A channel's newest message handled, and whether the channel is a DM."""

    last: int
    direct: bool


class HistoryCursor:
    """``CURSOR_FILE`` in memory: ``note`` moves a channel's mark forward, a write in a thread follows (one at a
    time; the notes made meanwhile go in the next one). A write that fails is logged once and tried again at the
    next note: a cursor behind only makes the next catch-up read messages the inbox already took."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.marks: dict[str, Mark] = {}
        self.newest = 0  # the newest message id noted in any channel (0: none yet)
        self._dirty = False
        self._writing: asyncio.Task[None] | None = None
        self._failed = False

    def load(self) -> None:
        data = self.workspace.read_state(CURSOR_FILE, log, "discord: the catch-up cursor starts afresh")
        channels = data.get("channels")
        self.newest = int(data["newest"]) if str(data.get("newest", "")).isdigit() else 0
        for channel, mark in (channels if isinstance(channels, dict) else {}).items():
            if isinstance(mark, dict) and str(mark.get("last", "")).isdigit():
                self.marks[str(channel)] = Mark(int(mark["last"]), mark.get("direct") is True)

    def known(self, channel: str) -> bool:
        return channel in self.marks

    def note(self, channel: str, message_id: str | int, direct: bool) -> None:
        """``message_id`` in ``channel`` was handled: the channel's mark moves forward to it (never back)."""
        mark = self.marks.get(channel)
        if mark is not None and mark.last >= int(message_id):
            return
        self.marks[channel] = Mark(int(message_id), direct)
        self.newest = max(self.newest, int(message_id))
        self._dirty = True
        if self._writing is None or self._writing.done():
            self._writing = asyncio.get_running_loop().create_task(self._write(), name="discord-cursor")

    def recent(self) -> list[tuple[str, Mark]]:
        """The ``MAX_CHANNELS`` channels with the newest marks (a snowflake grows with time), newest first."""
        return sorted(self.marks.items(), key=lambda kv: kv[1].last, reverse=True)[:MAX_CHANNELS]

    async def flush(self) -> None:
        """The last notes written (at a stop)."""
        if self._writing is not None:
            await asyncio.gather(self._writing, return_exceptions=True)
        if self._dirty:
            await self._write()

    async def _write(self) -> None:
        while self._dirty:
            self._dirty = False
            channels = {ch: {"last": str(m.last), "direct": m.direct} for ch, m in self.recent()}
            data = {"newest": str(self.newest), "channels": channels}
            try:
                await asyncio.to_thread(self.workspace.write_json, CURSOR_FILE, data, durable=False)
            except OSError as err:
                if not self._failed:
                    log.warning("discord: %s could not be written (%s); tried again at the next note", CURSOR_FILE, err)
                self._failed = True
                return
            self._failed = False


async def catch_up(
    client: discord.Client,
    cursor: HistoryCursor,
    take: Callable[[discord.Message], Awaitable[bool]],
    order: asyncio.Lock,
    stopping: Callable[[], bool],
    new_dms: Sequence[str] = (),
) -> None:
    """Each known channel's messages after its cursor, oldest first, handed to ``take`` (False: not taken, a stop
    came while it was held: that channel's catch-up ends, its cursor stays before it); then ``new_dms`` (the allowed
    users' DMs) the cursor does not know, after the newest id handled anywhere. A channel's history is read holding
    ``order``: a message the gateway delivers meanwhile is taken after the older ones."""
    import aiohttp
    import discord

    read = 0
    channels = cursor.recent()
    if cursor.newest:
        unknown = dict.fromkeys(dm for dm in new_dms if not cursor.known(dm))
        channels += [(dm, Mark(cursor.newest, True)) for dm in unknown]
    for channel_id, mark in channels:
        kind = discord.ChannelType.private if mark.direct else discord.ChannelType.text
        channel = client.get_partial_messageable(int(channel_id), type=kind)
        count = 0
        try:
            async with order:
                history = channel.history(after=discord.Object(mark.last), limit=MAX_MESSAGES, oldest_first=True)
                async for message in history:
                    if stopping():
                        return
                    count += 1
                    if not await take(message):
                        break
        except (discord.HTTPException, aiohttp.ClientError, OSError, TimeoutError) as err:
            log.warning(
                "discord: channel %s's history could not be read (%s): read again after the next new session",
                channel_id,
                err,
            )
        read += count
        if count >= MAX_MESSAGES:
            log.warning(
                "discord: channel %s had %d or more messages since the last one handled: the newer ones are skipped",
                channel_id,
                MAX_MESSAGES,
            )
    if read:
        log.info("discord: %d message(s) read from the history of the channels the gateway may have missed", read)


async def allowed_dms(client: discord.Client, users: Sequence[str]) -> list[str]:
    """The DM channels of ``users`` (``POST /users/@me/channels``: the DM each has with the bot, made if none);
    one Discord cannot open now is left out (logged)."""
    found = []
    for user in users:
        try:
            dm = await call(f"open the DM of {user}", client.http.start_private_message(int(user)))
            found.append(str(dm["id"]))
        except (DiscordUnavailable, DeliveryError, KeyError) as err:
            log.info("discord: %s: its history is not read now", err)
    return found
