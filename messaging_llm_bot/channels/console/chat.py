"""The terminal chat: the same agent and commands as every channel, on stdin/stdout; this module is its main
thread (the prompt, Ctrl-C, the lines typed meanwhile), service.py the channel under it.

Interactive (stdin is a terminal): a prompt, progress on stderr, collectors, jobs and reminders running.
Scripted (stdin is a pipe): one message per line, one reply block per message (the reply followed by an empty
line), nothing else on stdout; EOF ends with status 0.

Messages for the model go through the durable inbox like every channel's: a message a crash left unanswered is
answered first at the next start (its reply block comes before the new ones; a note naming it goes to stderr).

While an answer is written, the terminal's line discipline holds what the owner types until Enter; the main
thread looks for such a line between its other duties (a question, Ctrl-C) and never blocks on it: what such a
line does by the busy mode is docs/conversation.md's "The terminal chat". The lines that came with the Enter
readline returned at (pasted, typed quickly) are taken so too; keys with no Enter yet start the next prompt's line
(extras.Keyboard). A scripted chat reads its next line only after the reply: each line is its own turn.

One terminal chat per workspace (``state/console.lock``): two would both answer the message a crash left
unanswered, both deliver this conversation's reminders and jobs and interleave one conversation. A Telegram or
Signal bot on the same workspace is no conflict (its own conversations, items, reminders).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TextIO

from messaging_llm_bot.channels.console.extras import (
    HISTORY_FILE,
    Keyboard,
    ReadLine,
    Screen,
    line_reader,
    typed_so_far,
)
from messaging_llm_bot.channels.console.service import CHAT, ConsoleService, Terminal
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.shutdown import take_lock

QUIT_COMMANDS = ("/quit", "/exit")
EXIT_USAGE = 2
POLL_SECONDS = 0.1  # how often the main thread looks for a line typed meanwhile while an answer is written
#: Wakes the main thread at readline's prompt to print what waits (extras.Screen.wake). Its default action is to
#: ignore it: one sent as the chat ends, its handler put back, does nothing.
WAKE_SIGNAL: signal.Signals | None = getattr(signal, "SIGURG", None)


def run_console(
    runtime: Runtime,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    *,
    job_clock: Callable[[], datetime] | None = None,
) -> int:
    """Chat on the terminal until EOF or /quit; returns the exit status (2 when another terminal chat runs
    on the workspace: it holds the lock). ``job_clock``: the jobs' clock (a test's; None: the real one)."""
    term = Terminal(stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr)
    hint = "leave it first (/quit), or pass another --workspace"
    lock = take_lock(runtime.workspace, ConsoleService.LOCK_FILE, ConsoleService.LOCK_WHO, hint=hint, out=term.stderr)
    if lock is None:
        return EXIT_USAGE
    try:
        return _chat(runtime, term, job_clock)
    finally:
        lock.release()


def _chat(runtime: Runtime, term: Terminal, job_clock: Callable[[], datetime] | None) -> int:
    stdin, stdout = term.stdin, term.stdout
    interactive = stdin.isatty()
    if interactive:
        print(
            "Terminal chat with your assistant. /help for commands, Ctrl-C stops an answer, /quit or Ctrl-D to leave.",
            file=stdout,
            flush=True,
        )
    keyboard = Keyboard(stdin, interactive)
    read_line, save_history = line_reader(keyboard, stdout, runtime.workspace.path(HISTORY_FILE))
    if interactive:  # reminders and job replies are printed between the user's lines, never into one being typed
        typed = typed_so_far(stdin, stdout, interactive)
        term = Terminal(stdin, stdout, term.stderr, Screen(stdout, typed, _waker() if typed is not None else None))
    service = ConsoleService(runtime, term)
    service.job_clock = job_clock
    with _signals(term.screen):
        try:
            service.start()
            if service.stopped.is_set():
                return 1  # it could not start: the log says why
            _prompt(service, read_line, keyboard)
            service.stop(10)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: a message being answered stays in the inbox
            print("", file=stdout)
            service.leave_now()
        finally:
            save_history()
    return 0


def _waker() -> Callable[[], None] | None:
    """A readline prompt's ``Screen.wake``: WAKE_SIGNAL to the main thread (``_signals`` handles it there); None
    where there is no such signal or the chat is not on the main thread (only it takes signals)."""
    if WAKE_SIGNAL is None or threading.current_thread() is not threading.main_thread():
        return None
    main, signum = threading.get_ident(), WAKE_SIGNAL
    return lambda: signal.pthread_kill(main, signum)


@contextlib.contextmanager
def _signals(screen: Screen | None) -> Iterator[None]:
    """While the chat runs on the main thread: SIGTERM leaves it, WAKE_SIGNAL prints what waits at the prompt
    (``Screen.print_at_prompt``); the handlers before are put back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers: dict[signal.Signals, Callable[[int, object], None]] = {signal.SIGTERM: _interrupt}
    if screen is not None and screen.wake is not None and WAKE_SIGNAL is not None:
        handlers[WAKE_SIGNAL] = lambda signum, frame: screen.print_at_prompt()
    previous = {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _prompt(service: ConsoleService, read_line: ReadLine, keyboard: Keyboard) -> None:
    """Read and answer lines until the input ends or /quit (what the last run left answered first)."""
    screen = service.term.screen
    ended = _answered(service, service.submit(""), keyboard)
    while not ended:
        if screen is not None:
            screen.before_prompt()  # job replies that came meanwhile; then the read shows the prompt
        line = read_line(screen.reading if screen is not None else _no_screen)
        if screen is not None:
            screen.after_prompt()
        text = line.strip()
        if not line or text.lower() in QUIT_COMMANDS:
            return
        if text and not (service.asked.is_set() and service.answer_question(text)):
            ended = _answered(service, service.submit(text), keyboard)


def _no_screen() -> None:
    """A scripted chat's read: no screen to tell that the terminal is read."""


def _answered(service: ConsoleService, first: concurrent.futures.Future[None], keyboard: Keyboard) -> bool:
    """The main thread while the chat answers: it reads the answer to a question shown, takes lines typed
    meanwhile, and stops the answer at a Ctrl-C (a second one, or SIGTERM, raises). True when the input ended
    meanwhile (Ctrl-D, /quit): the chat ends after the answer."""
    stopping, ended, waiting = False, False, [first]
    while not all(one.done() for one in waiting):
        try:
            if service.asked.is_set():  # the next line is the question's answer (Ctrl-C declines it)
                service.answer_question(keyboard.readline())
            elif not ended and keyboard.ready():
                line = keyboard.readline()
                ended = not line or line.strip().lower() in QUIT_COMMANDS
                typed = None if ended else _typed_meanwhile(service, line.strip())
                waiting += [typed] if typed is not None else []
            else:
                concurrent.futures.wait(waiting, POLL_SECONDS)
            if stopping:
                service.runtime.agent.stop(CHAT)  # again: the turn may not have started when Ctrl-C came
        except KeyboardInterrupt as exc:
            if stopping or isinstance(exc, Terminated):
                raise
            stopping = True
            service.stop_turn()
            print("\n… stopping (Ctrl-C again to leave the chat)", file=service.term.stderr, flush=True)
    return ended


def _typed_meanwhile(service: ConsoleService, text: str) -> concurrent.futures.Future[None] | None:
    """A line typed while an answer is written, handed to the chat (its future; None: nothing to answer)."""
    if text.lower() == "/stop":
        service.stop_turn()
        print("… stopping", file=service.term.stderr, flush=True)
        return None
    return service.submit(text) if text else None


class Terminated(KeyboardInterrupt):
    """SIGTERM: leave the chat (a first Ctrl-C only stops the turn being answered)."""


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM ends the terminal chat like a second Ctrl-C."""
    raise Terminated
