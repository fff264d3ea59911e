"""One asyncio event loop in a daemon thread, for the MCP connections of a skill set.

The MCP SDK is asyncio-based (anyio); the bot's turns, the CLI and doctor are plain threads. Each
connection lives on this loop; a thread hands it a coroutine and waits for the answer with a bound.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An event loop started on first use in a daemon thread; ``stop`` ends it."""

    def __init__(self, name: str = "mcp") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop (started now when needed)."""
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()
                thread = threading.Thread(target=self._run, args=(loop, ready), name=self.name, daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
        finally:
            loop.close()

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coroutine`` on the loop and wait up to ``timeout`` seconds for it (TimeoutError after:
        the coroutine is cancelled). Never call this from the loop's own thread."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop())
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"not done within {timeout:g} s") from None

    def stop(self, timeout: float = 5.0) -> None:
        """End the loop (its tasks should be finished first) and wait for its thread."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
