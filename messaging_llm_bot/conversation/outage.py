"""A server a channel depends on (Signal's signal-cli daemon, Matrix's homeserver) that cannot be reached: the
outage is logged once when it begins and once when it ends, whoever notices it first (the event stream, a
send), and the channel tries again after a wait that doubles up to a bound (``Backoff``); a server's event
stream read until the channel stops, opened again after each outage (``read_stream``: Signal's)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Protocol, TypeVar

log = logging.getLogger(__name__)

EventT = TypeVar("EventT")

#: The first wait after a failure.
BACKOFF_START_SECONDS = 0.5
#: The longest wait between two tries (a channel's ``backoff_max``, conversation/service.py).
BACKOFF_MAX_SECONDS = 30.0


class Outage:
    """Whether ``server`` (as the log names it: "the signal-cli daemon at http://...") is down for ``channel``;
    said in the channel's own log (``logger``)."""

    def __init__(self, channel: str, server: str, logger: logging.Logger = log) -> None:
        self.channel, self.server, self.log = channel, server, logger
        self.down = False
        self.failures = 0  # failed tries since the outage began (said when it ends)

    def failed(self, err: BaseException) -> None:
        """It could not be reached: logged at the first failure of an outage only."""
        self.failures += 1
        if not self.down:
            self.down = True
            self.log.warning("%s: %s is not reachable (%s); retrying until it is back", self.channel, self.server, err)

    def ok(self) -> None:
        """It answered: the end of an outage is logged."""
        if self.down:
            self.down = False
            self.log.info("%s: %s is reachable again (after %d failed tries)", self.channel, self.server, self.failures)
        self.failures = 0

    @contextlib.contextmanager
    def watch(self, unavailable: type[Exception]) -> Iterator[None]:
        """Around one call to the server: ``unavailable`` raised is ``failed`` (and raised on), an answer ``ok``."""
        try:
            yield
        except unavailable as err:
            self.failed(err)
            raise
        self.ok()


class Backoff:
    """The wait before the next try: ``start`` seconds, doubled after each failure up to ``most`` (the first one
    too: a ``most`` under ``start`` bounds every wait)."""

    def __init__(self, most: float, start: float = BACKOFF_START_SECONDS) -> None:
        self.most, self.start = most, min(start, most)
        self.delay = self.start

    def next(self) -> float:
        """This wait; the next one is twice as long (at most ``most``)."""
        delay = self.delay
        self.delay = min(delay * 2, self.most)
        return delay

    def reset(self) -> None:
        """It worked: the next failure waits ``start`` again."""
        self.delay = self.start


class Reconnecting(Protocol):
    """What ``read_stream`` uses of the running channel (conversation/service.py's ``ChannelService``)."""

    backoff_max: float

    @property
    def stopping(self) -> bool: ...

    async def sleep(self, seconds: float) -> None: ...


async def read_stream(
    events: Callable[[Callable[[], None]], AsyncIterator[EventT]],
    handle: Callable[[EventT], Awaitable[None]],
    outage: Outage,
    unavailable: type[Exception],
    host: Reconnecting,
    stream: str,
) -> None:
    """Each event of a server's stream handled in order until ``host`` stops. ``events(on_open)`` opens the stream
    and calls ``on_open`` once it is open (``stream`` names it in the log line of the first open); one that cannot
    be opened, fails (``unavailable``) or ends is the outage, opened again after ``Backoff``'s wait. A bug in one
    event is logged and the stream opened again: it must not end the channel's intake for good."""
    backoff = Backoff(host.backoff_max)
    connected = False
    while not host.stopping:
        opened = False

        def on_open() -> None:
            nonlocal opened, connected
            opened = True
            backoff.reset()
            outage.ok()
            if not connected:
                connected = True
                outage.log.info("%s: connected to %s", outage.channel, stream)

        try:
            async for event in events(on_open):
                await handle(event)
            raise unavailable("the event stream ended")
        except unavailable as err:
            outage.failed(err)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - see above
            outage.log.exception("%s: reading the event stream failed", outage.channel)
        if not opened or outage.down:
            await host.sleep(backoff.next())
