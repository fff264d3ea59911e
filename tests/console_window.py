"""``python -m tests.console_window GO ARGS``: ``python -m messaging_llm_bot ARGS`` with the terminal chat held in
the gap between two prompts (console/extras.py's ``PromptLines.read``, before its prompt), the one after the first
line sent: a notice is printed there (from a thread, as the channel prints one), the marker ``HELD`` once it is,
and the chat goes on only when the test writes a word into the named pipe GO: ``go``, or ``readable`` (go on once
what the test typed can be read from the terminal). A race made an order: what the test types lands in the gap
every time."""

from __future__ import annotations

import os
import select
import sys
import threading
from collections.abc import Callable

from messaging_llm_bot.channels.console.extras import PromptLines
from messaging_llm_bot.cli.run import run_and_exit

NOTICE = "📬 a notice in the gap"
HELD = "[held in the gap]"
HOLD_READ = 2  # the read after the first line sent (the first is the start's)


def hold(go: str) -> None:
    original = PromptLines.read
    reads = [0]

    def read(self: PromptLines, busy: bool) -> str:
        reads[0] += 1
        if reads[0] == HOLD_READ and not self._lines:
            printing = threading.Thread(target=lambda: print(f"{NOTICE}\n", flush=True))
            printing.start()
            printing.join(30)
            os.write(sys.stderr.fileno(), f"{HELD}\n".encode())  # one write: no key typed after it is echoed inside
            with open(go) as pipe:
                word = pipe.readline().strip()
            if word == "readable":
                select.select([sys.stdin.fileno()], [], [], 30)
        return original(self, busy)

    PromptLines.read = read  # type: ignore[method-assign]


def run_held(hold: Callable[[str], None]) -> None:
    """``python -m messaging_llm_bot ARGS`` with ``hold`` installed, given the named pipe GO (argv's first)."""
    go = sys.argv.pop(1)
    if not os.path.exists(go):
        sys.exit(f"no pipe {go}")
    hold(go)
    run_and_exit()


if __name__ == "__main__":
    run_held(hold)
