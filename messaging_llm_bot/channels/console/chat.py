"""The terminal chat: the same agent and commands as Telegram, on stdin/stdout.

Interactive (stdin is a terminal): a prompt, progress on stderr, collectors running.
Scripted (stdin is a pipe): one message per line, one reply block per message (the reply
followed by an empty line), nothing else on stdout; EOF ends with status 0.

Messages for the model go through the durable inbox (``assistant_framework.inbox``) like Telegram's:
a message a crash left unanswered is answered first at the next start (its reply block comes before
the new ones; a note naming it goes to stderr). Interactive, the chat's reminders and scheduled jobs run
while it is open (extras.py, jobs.py), printed between the user's lines.

One terminal chat per workspace (``state/console.lock``): two would both answer the message a crash
left unanswered, both deliver this conversation's reminders and jobs and interleave one conversation. A
Telegram or Signal bot on the same workspace is no conflict (its own conversations, items, reminders).
"""

from __future__ import annotations

import contextlib
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TextIO

from assistant_framework.inbox import Inbox, InboxItem
from assistant_framework.media.files_out import FileSender, FileToSend
from messaging_llm_bot.agent.guard import ALLOW_CONVERSATION, ApprovalRequest, ApproveCallback
from messaging_llm_bot.agent.turn import AgentEvent, reply_text
from messaging_llm_bot.channels.console.extras import (
    HISTORY_FILE,
    LiveReply,
    Screen,
    line_reader,
    typed_so_far,
)
from messaging_llm_bot.channels.console.jobs import ConsoleJobs
from messaging_llm_bot.channels.console.meanwhile import TypedMeanwhile
from messaging_llm_bot.channels.contract import Capabilities
from messaging_llm_bot.conversation.approvals import ALLOWANCE, offers_conversation, question_text
from messaging_llm_bot.conversation.commands import run_command, unknown_command_text
from messaging_llm_bot.conversation.intake import left_by_last_run
from messaging_llm_bot.conversation.markup import terminal_text
from messaging_llm_bot.conversation.runtime import Runtime
from messaging_llm_bot.conversation.shutdown import take_lock
from messaging_llm_bot.conversation.turn import TurnRequest, agent_incoming

CONVERSATION_ID = "console"
#: What the terminal chat can do (channels/contract.py): one reader, text only, the answer printed as it
#: streams (appended, never edited), a reply printed whole (a bound, not a platform limit), approvals typed y/n.
#: A file "sent" to the terminal is its path printed: nothing is copied, so no size bound beyond the workspace's.
CAPABILITIES = Capabilities(
    max_message_length=1_000_000, length_unit="chars", media_out=frozenset({"file"}), max_file_bytes=1 << 40
)
QUIT_COMMANDS = ("/quit", "/exit")
LOCK_FILE = "state/console.lock"
EXIT_USAGE = 2


def progress_line(event: AgentEvent) -> str | None:
    """A short stderr line for a progress event, or None for events not worth showing."""
    if event.kind == "thinking":
        return f"… thinking (round {event.data.get('round')})"
    if event.kind == "skill_call":
        return f"… running skill {event.data.get('skill')}"
    if event.kind == "skill_result" and not event.data.get("ok"):
        return f"… skill {event.data.get('skill')} failed: {event.data.get('summary')}"
    return None


def terminal_approver(stdin: TextIO, stdout: TextIO) -> Callable[[ApprovalRequest], bool | str]:
    """Ask the owner at the terminal to confirm a call the policy marks ``ask`` (the question every channel
    asks; anything but y means no; c allows it for this conversation where the question offers that)."""

    def approve(request: ApprovalRequest) -> bool | str:
        offer = offers_conversation(request)
        how = f"(c: allow for this conversation: {ALLOWANCE}) [y/N/c]" if offer else "[y/N]"
        print(f"\n{question_text(request, how)} ", end="", file=stdout, flush=True)
        word = stdin.readline().strip().lower()
        if offer and word in ("c", "chat"):
            return ALLOW_CONVERSATION
        return word in ("y", "yes")

    return approve


def answer(
    runtime: Runtime,
    text: str,
    *,
    progress: TextIO | None = None,
    conversation_id: str = CONVERSATION_ID,
    approve: ApproveCallback | None = None,
    stream: bool = False,
    live: LiveReply | None = None,
) -> str:
    """The reply block for one input line: a command's text or the agent's reply (with footer).

    ``stream``: read the model's answer as a stream (``llm.stream``), so a stop cuts it off at once;
    ``live``: print the answer there as it arrives."""
    reply = run_command(runtime, conversation_id, text)
    if reply is not None:
        return terminal_text(reply)  # a command's text without its markup (no ** or escaping backslashes)
    if text.startswith("/"):
        return unknown_command_text(text.split()[0])

    def on_event(event: AgentEvent) -> None:
        if event.kind == "delta" and live is not None:
            live.delta(str(event.data.get("text", "")))
            return
        line = progress_line(event)
        if line and progress is not None:
            print(line, file=progress, flush=True)

    def show_file(one: FileToSend) -> str:
        # The terminal is on the workspace's machine: the file is where it is, its path is what to show.
        caption = f" ({one.caption})" if one.caption else ""
        print(f"📎 {one.path}{caption}", file=progress or sys.stdout, flush=True)
        return str(one.path)

    send_file = FileSender(runtime.workspace, f"console:{time.time_ns()}", show_file, CAPABILITIES.max_file_bytes)
    request = TurnRequest(conversation_id, text, conversation_id, "owner", None, True, True, send_file=send_file)
    incoming = agent_incoming(request, stream, approve, on_event)
    return reply_text(runtime.agent.handle(incoming))


def answer_durably(
    runtime: Runtime,
    inbox: Inbox,
    text: str | InboxItem,
    *,
    progress: TextIO | None = None,
    approve: ApproveCallback | None = None,
    stream: bool = False,
    live: LiveReply | None = None,
    meanwhile: TypedMeanwhile | None = None,
) -> tuple[str, str | None]:
    """Like ``answer`` but a model-bound message is kept in the inbox (``text`` may be one stored already);
    returns (reply, item id to complete). With ``meanwhile``, lines typed during the turn may join it (busy
    modes): the reply is recorded with them, completed with it by ``meanwhile.complete_answered()``."""
    if isinstance(text, InboxItem):
        item: InboxItem | None = text
        text = str(text.payload.get("text", ""))
    elif text.startswith("/"):
        return answer(runtime, text, progress=progress), None
    else:
        try:
            item = inbox.accept(f"console:{time.time_ns()}", CONVERSATION_ID, {"text": text})
        except OSError as err:
            from messaging_llm_bot.conversation.held import storage_error_text  # the same wording in every channel

            return storage_error_text(err), None
    assert item is not None  # a new id each time: never a re-delivery
    joining = meanwhile.turn(text) if meanwhile is not None else contextlib.nullcontext()
    with joining:
        reply = answer(runtime, text, progress=progress, approve=approve, stream=stream, live=live)
    try:
        inbox.record_reply(item.item_id, reply, meanwhile.answered() if meanwhile is not None else None)
    except OSError:
        pass  # the reply is printed right after; only a crash in between would ask the model again
    return reply, item.item_id


@dataclass
class _Question:
    """A confirmation the worker thread waits on; the main thread answers it."""

    request: ApprovalRequest
    answer: bool | str = False
    done: threading.Event = field(default_factory=threading.Event)


def answer_stoppably(
    runtime: Runtime,
    inbox: Inbox,
    text: str | InboxItem,
    *,
    progress: TextIO,
    ask: ApproveCallback | None = None,
    live: LiveReply | None = None,
    meanwhile: TypedMeanwhile | None = None,
) -> tuple[str, str | None]:
    """``answer_durably`` in a worker thread: Ctrl-C stops the turn (``Agent.stop``) and the reply says so;
    a second Ctrl-C (or SIGTERM) leaves the chat, the message staying in the inbox as before. With
    ``meanwhile``, a line typed while the turn runs is taken here (busy modes, console/meanwhile.py).

    ``ask(request) -> bool`` confirms a call; it runs here in the main thread, where Ctrl-C lands, so a
    Ctrl-C at an open question declines it and stops the turn (no Enter needed)."""
    box: dict[str, Any] = {}
    # An Event, not Thread.join: a join interrupted by Ctrl-C can leave is_alive() False while the thread runs.
    finished = threading.Event()
    questions: queue.Queue[_Question] = queue.Queue()

    def approve_from_worker(request: ApprovalRequest) -> bool | str:
        question = _Question(request)
        questions.put(question)
        question.done.wait()
        return question.answer

    def work() -> None:
        try:
            box["out"] = answer_durably(
                runtime,
                inbox,
                text,
                progress=progress,
                approve=approve_from_worker if ask is not None else None,
                stream=runtime.agent.settings.llm.stream,
                live=live,
                meanwhile=meanwhile,
            )
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=work, name="console-turn", daemon=True).start()
    _serve_turn(runtime, finished, questions, progress=progress, ask=ask, meanwhile=meanwhile)
    if "error" in box:
        raise box["error"]
    out: tuple[str, str | None] = box["out"]
    return out


def _serve_turn(
    runtime: Runtime,
    finished: threading.Event,
    questions: queue.Queue[_Question],
    *,
    progress: TextIO,
    ask: ApproveCallback | None,
    meanwhile: TypedMeanwhile | None,
) -> None:
    """The main thread while the worker answers: it asks the worker's questions, takes lines typed meanwhile,
    and stops the turn at a Ctrl-C (a second one, or SIGTERM, raises), until the worker is ``finished``."""
    stopping = False
    while not finished.is_set():
        try:
            try:
                question = questions.get(timeout=0.1)
            except queue.Empty:
                question = None
            if question is not None and ask is not None:  # only asked for when there is an ask
                try:
                    said = ask(question.request)
                    question.answer = False if stopping else (said if said == ALLOW_CONVERSATION else bool(said))
                finally:
                    question.done.set()  # answered, or declined by a Ctrl-C at the question
            elif meanwhile is not None:
                meanwhile.poll()
            if stopping:
                runtime.agent.stop(CONVERSATION_ID)  # again: the turn may not have started when Ctrl-C came
        except KeyboardInterrupt as exc:
            if stopping or isinstance(exc, Terminated):
                raise
            stopping = True
            runtime.agent.stop(CONVERSATION_ID)
            print("\n… stopping (Ctrl-C again to leave the chat)", file=progress, flush=True)


def _replay(runtime: Runtime, inbox: Inbox, stdout: TextIO, stderr: TextIO, interactive: bool) -> None:
    """Answer what the last run left (a job run is jobs.py's; one a recorded reply answers is completed with it)."""
    for item in left_by_last_run(inbox, CONVERSATION_ID, "console")[1]:
        text = str(item.payload.get("text", ""))
        print(f"(answering a message left unanswered by the last run: {text[:80]!r})", file=stderr, flush=True)
        reply = (
            item.reply if item.reply is not None else answer(runtime, text, progress=stderr if interactive else None)
        )
        print(reply.rstrip("\n") + "\n", file=stdout, flush=True)
        for one in [*item.merged, item.item_id]:
            inbox.complete(one)


def run_console(
    runtime: Runtime,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    *,
    job_clock: Callable[[], datetime] | None = None,
) -> int:
    """Chat on the terminal until EOF or /quit; returns the exit status (2 when another terminal chat runs
    on the workspace: it holds ``LOCK_FILE``). ``job_clock``: the jobs' clock (a test's; None: the real one)."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    hint = "leave it first (/quit), or pass another --workspace"
    lock = take_lock(runtime.workspace, LOCK_FILE, "chat: another terminal chat", hint=hint, out=stderr)
    if lock is None:
        return EXIT_USAGE
    try:
        return _chat(runtime, stdin, stdout, stderr, job_clock)
    finally:
        lock.release()


def _chat(
    runtime: Runtime, stdin: TextIO, stdout: TextIO, stderr: TextIO, job_clock: Callable[[], datetime] | None
) -> int:
    interactive = stdin.isatty()
    if interactive:
        runtime.start_background(notify=lambda title, text: print(f"\n[{title}] {text}", file=stderr, flush=True))
        print(
            "Terminal chat with your assistant. /help for commands, Ctrl-C stops an answer, /quit or Ctrl-D to leave.",
            file=stdout,
            flush=True,
        )
    read_line, save_history = line_reader(stdin, stdout, interactive, runtime.workspace.path(HISTORY_FILE))
    inbox = Inbox(runtime.workspace)
    screen, jobs, meanwhile = None, None, None
    if interactive:
        # Reminders and job replies are printed between the user's lines, never into one being typed.
        screen = Screen(stdout, typed_so_far(stdin, stdout, interactive))
        jobs = ConsoleJobs(runtime, inbox, screen, CONVERSATION_ID, clock=job_clock)
        meanwhile = TypedMeanwhile(runtime, inbox, CONVERSATION_ID, stdin, stderr)  # lines typed while it answers
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        _replay(runtime, inbox, stdout, stderr, interactive)
        if jobs is not None:
            jobs.start()
        while True:
            typed = _next_typed(meanwhile, screen, read_line)
            if typed is None:
                break
            if not typed:
                continue
            if isinstance(typed, str) and typed.lower() in QUIT_COMMANDS:
                break
            _exchange(runtime, inbox, typed, interactive, stdin, stdout, stderr, meanwhile)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: a message being answered stays in the inbox
        print("", file=stdout)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        _close(screen, jobs)
        save_history()
    return 0


def _exchange(
    runtime: Runtime,
    inbox: Inbox,
    typed: str | InboxItem,
    interactive: bool,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
    meanwhile: TypedMeanwhile | None,
) -> None:
    """One typed message answered and printed, then completed in the inbox (with what was answered meanwhile)."""
    # Only someone at a terminal can confirm; a scripted (piped) chat refuses "ask" calls.
    if interactive:
        live = LiveReply(stdout)  # the answer appears as it is written, then the rest of the block
        ask = terminal_approver(stdin, stdout)
        reply, item_id = answer_stoppably(
            runtime, inbox, typed, progress=stderr, ask=ask, live=live, meanwhile=meanwhile
        )
        reply = live.rest(reply)
    else:
        reply, item_id = answer_durably(runtime, inbox, typed)
    print(reply.rstrip("\n") + "\n", file=stdout, flush=True)
    if item_id is not None:
        inbox.complete(item_id)
    if meanwhile is not None:
        meanwhile.complete_answered()


def _close(screen: Screen | None, jobs: ConsoleJobs | None) -> None:
    if screen is not None:
        screen.close()  # what waits for a gap is left for the next start
    if jobs is not None:
        jobs.stop()


def _next_typed(
    meanwhile: TypedMeanwhile | None, screen: Screen | None, read_line: Callable[[], str]
) -> str | InboxItem | None:
    """What to answer next: a line typed while the last answer was written (its item when stored), else the
    next line read at the prompt; None at the end of input."""
    if meanwhile is not None and meanwhile.waiting:
        return meanwhile.waiting.popleft()
    if meanwhile is not None and meanwhile.ended:
        return None  # Ctrl-D typed while the last answer was written
    if screen is not None:
        screen.before_prompt()  # job replies that came meanwhile, then the prompt
    line = read_line()
    if screen is not None:
        screen.after_prompt()
    return line.strip() if line else None


class Terminated(KeyboardInterrupt):
    """SIGTERM: leave the chat (a first Ctrl-C only stops the turn being answered)."""


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM ends the terminal chat like a second Ctrl-C."""
    raise Terminated
