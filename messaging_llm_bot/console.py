"""The terminal chat: the same agent and commands as Telegram, on stdin/stdout.

Interactive (stdin is a terminal): a prompt, progress on stderr, collectors running.
Scripted (stdin is a pipe): one message per line, one reply block per message (the reply
followed by an empty line), nothing else on stdout; EOF ends with status 0.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from .agent import AgentEvent
from .commands import run_command

if TYPE_CHECKING:  # pragma: no cover
    from .runtime import BotRuntime

CONVERSATION_ID = "console"
QUIT_COMMANDS = ("/quit", "/exit")


def progress_line(event: AgentEvent) -> str | None:
    """A short stderr line for a progress event, or None for events not worth showing."""
    if event.kind == "thinking":
        return f"… thinking (round {event.data.get('round')})"
    if event.kind == "skill_call":
        return f"… running skill {event.data.get('skill')}"
    if event.kind == "skill_result" and not event.data.get("ok"):
        return f"… skill {event.data.get('skill')} failed: {event.data.get('summary')}"
    return None


def answer(runtime: "BotRuntime", text: str, *, progress: TextIO | None = None, conversation_id: str = CONVERSATION_ID) -> str:
    """The reply block for one input line: a command's text or the agent's reply (with footer)."""
    reply = run_command(runtime, conversation_id, text)
    if reply is not None:
        return reply
    if text.startswith("/"):
        return f"Unknown command {text.split()[0]}; see /help."

    def on_event(event: AgentEvent) -> None:
        line = progress_line(event)
        if line and progress is not None:
            print(line, file=progress, flush=True)

    result = runtime.agent.handle_message(conversation_id, text, on_event=on_event, chat_id=conversation_id, user_id="owner")
    return result.reply + (f"\n{result.footer}" if result.footer else "")


def run_console(
    runtime: "BotRuntime",
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Chat on the terminal until EOF or /quit; returns the exit status."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    interactive = stdin.isatty()
    if interactive:
        runtime.start_background(notify=lambda title, text: print(f"\n[{title}] {text}", file=stderr, flush=True))
        print("Terminal chat with your assistant. /help for commands, /quit or Ctrl-D to leave.", file=stdout, flush=True)
    try:
        while True:
            if interactive:
                print("you> ", end="", file=stdout, flush=True)
            line = stdin.readline()
            if not line:
                break
            text = line.strip()
            if not text:
                continue
            if text.lower() in QUIT_COMMANDS:
                break
            reply = answer(runtime, text, progress=stderr if interactive else None)
            print(reply.rstrip("\n") + "\n", file=stdout, flush=True)
    except KeyboardInterrupt:
        print("", file=stdout)
        return 130
    return 0
