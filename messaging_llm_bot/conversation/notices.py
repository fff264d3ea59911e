"""What every channel sends the owner unasked, the same way on each: a collector's notice, handed over from
its background thread, and the morning digest. The channel only sends a text to the owner's own chat (its
``send_notice(None, text)``: the owner's data never goes to the other allowed users)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.commands import collector_notice
from messaging_llm_bot.conversation.digest import build_digest

#: Sends a text to the owner's own chat on the channel's loop; True when it arrived.
SendToOwner = Callable[[str], Coroutine[Any, Any, bool]]


def notify_from_thread(loop: asyncio.AbstractEventLoop | None, send: SendToOwner, collector: str, text: str) -> None:
    """A collector's notice (called from its background thread) sent to the owner on the channel's ``loop``;
    nothing when the channel is not running (no loop, or closed)."""
    if loop is None or loop.is_closed():
        return
    notice = send(collector_notice(collector, text))
    try:
        asyncio.run_coroutine_threadsafe(notice, loop)
    except RuntimeError:  # closed meanwhile: the channel is stopping
        notice.close()


def digest_now(workspace: Workspace, timezone: str) -> str:
    """The /now digest for this moment in ``timezone`` (no model call)."""
    return build_digest(workspace, datetime.now(ZoneInfo(timezone)), timezone)


async def send_digest(workspace: Workspace, timezone: str, send: SendToOwner) -> None:
    """The morning digest to the owner."""
    await send(await asyncio.to_thread(digest_now, workspace, timezone))
