"""The ``send_file`` service a channel gives a turn: the checks and ledger of ``assistant_framework/media/
files_out.py``, with the channel's send run on the channel's event loop from the turn's worker thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from assistant_framework.media.files_out import FileSender, FileToSend
from assistant_framework.workspace import Workspace

#: How long a turn waits for one file to go out (a 50 MB upload on a slow line).
SEND_TIMEOUT_SECONDS = 120.0

SendOnLoop = Callable[[FileToSend], Coroutine[Any, Any, str]]


def file_sender(
    workspace: Workspace, answering: str, loop: asyncio.AbstractEventLoop, send: SendOnLoop, max_bytes: int
) -> FileSender:
    """The turn's ``send_file`` service: ``send`` (a coroutine of the channel, sending to the turn's chat) run on
    ``loop``; ``answering`` names the inbox item answered, the same when a restart answers it again."""

    def deliver(one: FileToSend) -> str:
        # Called from the turn's worker thread, never the loop's (the skill runs on the turn pool).
        return asyncio.run_coroutine_threadsafe(send(one), loop).result(SEND_TIMEOUT_SECONDS)

    return FileSender(ledger=workspace, answering=answering, deliver=deliver, max_bytes=max_bytes)
