"""A wait with a deadline that never loses a cancel of the task that waits.

``asyncio.wait_for`` on Python 3.11 returns what it waited for when that comes in the same pass of the event loop
as a cancel of the waiting task: the cancel is swallowed and the task goes on. Here that is a stop's wake-up (an
event set) and the stop's cancel of the task waiting for it, an album's next part and the cancel of the turn
waiting for it, the owner's answer and the stop that declines the question. ``within`` is ``wait_for`` as
Python 3.12 has it (``asyncio.timeout`` around the await): a cancel always goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(awaited: Awaitable[T], seconds: float) -> T:
    """What ``awaited`` gives, or ``TimeoutError`` after ``seconds`` (it is cancelled then, as ``wait_for`` does);
    a cancel of the caller cancels it too and is raised, whatever came in the same pass of the loop."""
    async with asyncio.timeout(seconds):
        return await awaited
