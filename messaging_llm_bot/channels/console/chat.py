"""The terminal chat's main thread (the lines typed, Ctrl-C); service.py is the channel under it, extras.py the
terminal's line editing. What the chat does at a terminal and piped: docs/telegram.md's "The terminal chat"; a line
sent while an answer is written: docs/conversation.md's busy modes.

One terminal chat per workspace (``state/console.lock``): two would both answer the message a crash left
unanswered, both deliver this conversation's reminders and jobs and interleave one conversation. A Telegram or
Signal bot on the same workspace is no conflict (its own conversations, items, reminders).
"""

from __future__ import annotations

import concurrent.futures
import sys
from collections.abc import Callable
from datetime import datetime
from typing import TextIO

from messaging_llm_bot.channels.console.extras import HISTORY_FILE, Lines, open_lines
from messaging_llm_bot.channels.console.service import ConsoleService, Terminal
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.service import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from messaging_llm_bot.conversation.shutdown import Terminated, sigterm_leaves, take_lock
from messaging_llm_bot.conversation.terminal_out import terminal_safe

WELCOME = "Terminal chat with your assistant. /help for commands, Ctrl-C stops an answer, /quit or Ctrl-D to leave."
QUIT_COMMANDS = ("/quit", "/exit")
LOCK_FILE, LOCK_WHO = "state/console.lock", "chat: another terminal chat"
POLL_SECONDS = 0.1  # how often the main thread looks for a line typed meanwhile while an answer is written
#: How long a Ctrl-C waits for a turn that is only finishing (its answer shown) before it counts as a stop.
SETTLE_SECONDS = 0.5
#: Said at a Ctrl-C at the prompt (no answer being written): the next Ctrl-C leaves.
LEAVE_HINT = "(Ctrl-C again, /quit or Ctrl-D to leave the chat)"


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
    lock = take_lock(runtime.workspace, LOCK_FILE, LOCK_WHO, hint=hint, out=term.stderr)
    if lock is None:
        return EXIT_USAGE
    try:
        return _chat(runtime, term, job_clock)
    finally:
        lock.release()


def _chat(runtime: Runtime, term: Terminal, job_clock: Callable[[], datetime] | None) -> int:
    interactive = term.stdin.isatty()
    if interactive:
        print(WELCOME, file=term.stdout, flush=True)
    history = runtime.workspace.path(HISTORY_FILE)
    with open_lines(term.stdin, term.stdout, interactive, history) as (lines, out), sigterm_leaves():
        err = out if out is not term.stdout else term.stderr  # at a terminal both above the prompt
        service = ConsoleService(runtime, Terminal(term.stdin, terminal_safe(out), terminal_safe(err), interactive))
        service.job_clock = job_clock
        try:
            service.start()
            if service.stopped.is_set():
                return EXIT_FAILED  # it could not start: the log says why
            _prompt(service, lines)
            service.stop(10)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: a message being answered stays in the inbox
            print("", file=out)
            service.leave_now()
    return EXIT_OK


def _prompt(service: ConsoleService, lines: Lines) -> None:
    """Read and answer lines until the input ends or /quit (what the last run left answered first), and the
    answers to lines sent before it are written. A line while a question is shown answers it; a Ctrl-C
    (``_interrupted``) stops the answer being written, or at the prompt says how to leave."""
    pending, ended = [service.submit("")], False
    stopped: list[concurrent.futures.Future[None]] = []  # what a first Ctrl-C stopped
    armed = False  # a Ctrl-C came, and no line since: the next one leaves
    while not (ended and _done(pending)):
        pending = [] if _done(pending) else pending
        try:
            if ended or not (service.asked.is_set() or lines.ready(bool(pending))):
                concurrent.futures.wait(pending, POLL_SECONDS)
                continue
            line = lines.read(bool(pending))
        except KeyboardInterrupt as exc:
            stopped, armed = _interrupted(service, lines, exc, pending, stopped, armed), True
            continue
        armed = False
        text = line.strip()
        if service.asked.is_set() and service.answer_question(text) and line:
            continue  # the question's answer (Ctrl-D declines it)
        if not line or text.lower() in QUIT_COMMANDS:
            ended = True  # the chat ends once what was sent is answered
        elif not _done(pending) and text.lower() == "/stop":
            print("… stopping", file=service.term.stderr, flush=True)
            service.stop_until(list(pending))
        elif text:
            pending.append(service.submit(text))


def _interrupted(
    service: ConsoleService,
    lines: Lines,
    exc: KeyboardInterrupt,
    pending: list[concurrent.futures.Future[None]],
    stopped: list[concurrent.futures.Future[None]],
    armed: bool,
) -> list[concurrent.futures.Future[None]]:
    """A Ctrl-C: while an answer is written it stops it (what it stopped is returned); at the prompt of a terminal
    it clears the line typed and says how to leave: the chat was left by a Ctrl-C meant for an answer that had
    just ended. A second one in a row, one while a stop is under way, SIGTERM and piped input's leave (raised)."""
    # An answer shown a moment before is still being recorded: its turn ends within SETTLE_SECONDS (the prompt is
    # there all along, so the owner sees nothing being written).
    idle = not concurrent.futures.wait(pending, SETTLE_SECONDS).not_done
    if isinstance(exc, Terminated) or not _done(stopped) or (idle and (armed or not service.term.interactive)):
        raise exc
    if idle:
        lines.clear()
        print(LEAVE_HINT, file=service.term.stderr, flush=True)
        return stopped
    # Said before the stop: the turn's "⏹ Stopped." came first at times, then this line below it.
    print(lines.stop_line(), file=service.term.stderr, flush=True)
    service.stop_until(list(pending))
    return list(pending)


def _done(pending: list[concurrent.futures.Future[None]]) -> bool:
    return all(one.done() for one in pending)
