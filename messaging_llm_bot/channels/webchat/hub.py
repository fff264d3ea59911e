"""The open pages' event streams: what the channel says (a message, the live text of an answer, a question)
reaches every page that listens, on the web server's loop. A page that falls behind is dropped: it
reconnects and reads the history (nothing is only in a stream)."""

from __future__ import annotations

import asyncio
import threading
from typing import Literal, TypedDict

from messaging_llm_bot.channels.webchat.transcript import Message

#: Events waiting for one page before it is dropped (a stalled tab must not hold memory).
QUEUE_BOUND = 256
#: Pages listening at once (each holds a connection of the web server's bound).
MAX_LISTENERS = 8


class MessageEvent(TypedDict):
    """A message of the transcript, as the history gives it too."""

    type: Literal["message"]
    message: Message


class TypingEvent(TypedDict):
    type: Literal["typing"]


class LiveEvent(TypedDict):
    """The answer's text so far."""

    type: Literal["live"]
    text: str


class AskEvent(TypedDict):
    """An approval's question, answered on the page by its id."""

    type: Literal["ask"]
    id: str
    text: str


class AskedEvent(TypedDict):
    """The question ``id`` is closed (answered, or not in time)."""

    type: Literal["asked"]
    id: str


#: What a page's event stream carries (JSON, one ``data:`` line each).
Event = MessageEvent | TypingEvent | LiveEvent | AskEvent | AskedEvent


class Hub:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[tuple[asyncio.AbstractEventLoop, asyncio.Queue[Event | None]]] = []

    def listen(self) -> asyncio.Queue[Event | None] | None:
        """A queue of the events to come (on the calling loop), or None when too many pages listen."""
        queue: asyncio.Queue[Event | None] = asyncio.Queue(QUEUE_BOUND)
        with self._lock:
            if len(self._listeners) >= MAX_LISTENERS:
                return None
            self._listeners.append((asyncio.get_running_loop(), queue))
        return queue

    def leave(self, queue: asyncio.Queue[Event | None]) -> None:
        with self._lock:
            self._listeners = [(loop, q) for loop, q in self._listeners if q is not queue]

    def publish(self, event: Event) -> None:
        """From any thread."""
        with self._lock:
            listeners = list(self._listeners)
        for loop, queue in listeners:
            try:
                loop.call_soon_threadsafe(self._put, queue, event)
            except RuntimeError:  # that loop closed
                self.leave(queue)

    def _put(self, queue: asyncio.Queue[Event | None], event: Event) -> None:
        try:
            queue.put_nowait(event)
        except asyncio.QueueFull:
            self.leave(queue)
            while not queue.empty():
                queue.get_nowait()
            queue.put_nowait(None)  # the stream ends; the page reconnects and reads the history
