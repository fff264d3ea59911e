"""A channel's start and graceful stop, the same on every channel: one running copy per workspace (a lock
file), then at the stop no new turns, the running ones get ``runtime.shutdown_timeout_seconds``, then they are
cancelled and their messages stay in the inbox for the next start; a second stop request (Ctrl-C, SIGTERM)
cancels them at once. The channel stops taking messages its own way (``on_begin``: PTB's stop, the end of an
event stream) and calls ``finish`` once it has; the first channel of a process shuts the runtime down.

Nothing of a turn outlives the channel's loop: a question of an ``ask`` call open at the stop is declined at
once (no answer can come any more), a turn given up on has its call in the turn pool stopped too (a model call
hung up), ``finish`` waits a bound for the pool's threads, and the loop is closed with every task still on it
cancelled and ended (a typed line's task, a send a thread waits for)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator, Sequence
from typing import Any, TextIO

import filelock

from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.approvals import decline_questions_on
from messaging_llm_bot.conversation.pool import STOP_WAIT_SECONDS
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.turn import ChannelTurns

log = logging.getLogger(__name__)


def take_lock(
    workspace: Workspace, path: str, who: str, *, hint: str = "stop it first", out: TextIO | None = None
) -> filelock.FileLock | None:
    """The workspace's lock of one channel (``path``), or None after saying on ``out`` (stderr) that ``who``
    ("telegram: another bot") holds it already, and ``hint``: what to do."""
    lock = filelock.FileLock(str(workspace.path(path)), mode=0o600)
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        print(
            f"{who} is already running on workspace {workspace.root} ({path} is held); {hint}", file=out or sys.stderr
        )
        return None
    return lock


def shutdown_runtime(runtime: Runtime, timeout: float) -> None:
    """The runtime's own shutdown (collectors, memory work), reported, never raised: the exit code stays."""
    try:
        runtime.shutdown(timeout)
    except Exception as err:  # noqa: BLE001 - shutting down: report, do not mask the exit code
        log.warning("runtime shutdown failed: %s", err)


def run_own_loop(
    loop: asyncio.AbstractEventLoop,
    main: Coroutine[Any, Any, None],
    channel: str,
    what: str,
    known: Callable[[Exception], str | None] = lambda _err: None,
) -> bool:
    """Run a channel's ``main`` on its own ``loop`` (in this thread) to its end, then close the loop; False
    after an error: ``known`` gives the line the owner reads on stderr for one the channel expects (a failed
    login, a port in use), any other is one line in the log (``what``: "the Matrix channel"), its traceback
    at DEBUG, never on the owner's screen."""
    try:
        loop.run_until_complete(main)
        return True
    except Exception as err:  # noqa: BLE001 - one clear line, not a traceback on the owner's screen
        line = known(err)
        if line is not None:
            print(line, file=sys.stderr)
        else:
            log.error("%s: %s stopped after an error: %s: %s", channel, what, type(err).__name__, err)
            log.debug("%s: the error's traceback", channel, exc_info=err)
        return False
    finally:
        close_loop(loop)


def close_loop(loop: asyncio.AbstractEventLoop | None) -> None:
    """Close a channel's loop once it has run: the tasks still on it (a typed line's, a send a turn's thread
    waits for) cancelled and run to their end first, else each is destroyed pending ("Task was destroyed but it
    is pending!" on stderr) and a thread waiting for one waits on; then its async generators. Left open, its
    selector and self-pipe leak with every run of a channel in one process."""
    if loop is not None and not loop.is_closed():
        try:
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            if left:
                log.debug("%d task(s) left on the loop at its end: cancelled", len(left))
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


def request_stop(
    loop: asyncio.AbstractEventLoop | None,
    begin: Callable[[], None],
    stopped: threading.Event | None = None,
    timeout: float | None = None,
) -> None:
    """Ask a channel running on ``loop`` to stop (from any thread): ``begin`` runs on the loop; with
    ``timeout``, wait that long for ``stopped``."""
    if loop is not None and not loop.is_closed():
        try:
            loop.call_soon_threadsafe(begin)
        except RuntimeError:
            pass  # the loop closed meanwhile
    if timeout is not None and loop is not None and stopped is not None:
        stopped.wait(timeout)


class Terminated(KeyboardInterrupt):
    """SIGTERM on the main thread: leave at once (a first Ctrl-C may only stop the turn being answered)."""


@contextlib.contextmanager
def sigterm_leaves() -> Iterator[None]:
    """While a chat runs on the main thread (the terminal's), SIGTERM raises ``Terminated`` there, as a second
    Ctrl-C leaves; the handler before is put back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _terminated(signum: int, frame: object) -> None:
    raise Terminated


class ChannelStop:
    """The stop of one channel's turns; ``loop`` and ``turns`` are set as the channel starts."""

    def __init__(self, channel: str, timeout: float, on_begin: Callable[[], None] = lambda: None) -> None:
        self.channel = channel
        self.timeout = timeout
        self.on_begin = on_begin
        self.stopping = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.turns: ChannelTurns | None = None
        self._deadline = 0.0
        self._watchdog: asyncio.TimerHandle | None = None

    def install_signal_handlers(self, stop_signals: Sequence[int] | None) -> None:
        """Stop on these signals (only the main thread's loop can take them)."""
        for sig in stop_signals or ():
            try:
                assert self.loop is not None
                self.loop.add_signal_handler(sig, self.begin, signal.Signals(sig).name)
            except (NotImplementedError, RuntimeError, ValueError) as err:  # not the main thread / platform
                log.warning("%s: cannot handle signal %s (%s); stop with stop()", self.channel, sig, err)

    def begin(self, reason: str = "stop requested") -> None:
        """Stop taking new turns, give running ones ``timeout`` seconds, then cancel them (loop thread)."""
        if self.stopping:  # a second Ctrl-C / SIGTERM: do not wait any longer
            self.give_up()
            return
        self.stopping = True
        running = 0
        if self.turns is not None:
            self.turns.stopping = True
            running = self.turns.active
        log.info(
            "%s: %s: stopping; waiting up to %.0f s for %d turn(s) in flight; messages not yet answered stay "
            "in the inbox",
            self.channel,
            reason,
            self.timeout,
            running,
        )
        loop = self.loop or asyncio.get_event_loop()
        declined = decline_questions_on(loop)  # no answer can come now: a turn waiting for one goes on at once
        if declined:
            log.info("%s: %d open question(s) of ask calls declined: the channel stops", self.channel, declined)
        self._deadline = loop.time() + self.timeout
        self._watchdog = loop.call_later(self.timeout, self.give_up)
        self.on_begin()

    def give_up(self) -> None:
        """Cancel the turns still running, their calls in the turn pool stopped too: their messages stay in the
        inbox for the next start."""
        cancelled = self.turns.cancel_all() if self.turns is not None else 0
        if self.turns is not None:
            self.turns.pool.stop_calls()
        if cancelled:
            log.warning(
                "%s: %d turn(s) did not finish within %.0f s; their messages stay in the inbox and are answered "
                "at the next start",
                self.channel,
                cancelled,
                self.timeout,
            )

    async def finish(self) -> None:
        """Once the channel takes no more messages: wait for the turns until the deadline, cancel the rest,
        and free the turn pool."""
        if self.turns is not None:
            left = max(0.0, self._deadline - asyncio.get_running_loop().time()) if self.stopping else 0.0
            if not await self.turns.wait_idle(left):
                self.give_up()
                await self.turns.wait_idle(1.0)
            # The pool's threads told to stop and waited for, within a bound: one still running past it would
            # report to a closed loop (or hold the process's exit until it ends).
            running = await asyncio.to_thread(self.turns.pool.wait_calls, STOP_WAIT_SECONDS)
            if running:
                log.warning(
                    "%s: %d turn thread(s) still running %.0f s after they were told to stop; the channel ends "
                    "without them",
                    self.channel,
                    running,
                    STOP_WAIT_SECONDS,
                )
        if self._watchdog is not None:
            self._watchdog.cancel()
