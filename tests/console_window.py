"""``python -m tests.console_window GO ARGS``: ``python -m messaging_llm_bot ARGS`` with the terminal chat held in
the gap between deciding to prompt and reading the line (chat.py's ``_prompt``: ``Screen.before_prompt``, then the
read), at the prompt that follows the first reply: a notice is shown there (``Screen.show``, from a thread, as the
channel shows one), the marker ``HELD`` is printed once the notice is printed or waits, and the chat goes on only
when the test writes a word into the named pipe GO: ``go``, or ``readable`` (go on once what the test typed can be
read from the terminal: an end of input or a whole line). A race made an order: what the test types lands in the
gap every time."""

from __future__ import annotations

import os
import select
import sys
import threading
import time

from messaging_llm_bot.channels.console.extras import Screen
from messaging_llm_bot.cli.run import run_and_exit

NOTICE = "📬 a notice in the gap"
HELD = "[held in the gap]"
HOLD_PROMPT = 2  # the prompt after the first reply (the first is the start's)


def hold(go: str) -> None:
    original = Screen.before_prompt
    prompts = [0]

    def before_prompt(self: Screen) -> None:
        original(self)
        prompts[0] += 1
        if prompts[0] != HOLD_PROMPT:
            return
        printed = threading.Event()
        threading.Thread(target=self.show, args=(NOTICE, printed), daemon=True).start()
        deadline = time.monotonic() + 30
        while not (printed.is_set() or self._waiting) and time.monotonic() < deadline:
            time.sleep(0.01)  # the notice printed at once, or waiting for the prompt
        os.write(sys.stderr.fileno(), f"{HELD}\n".encode())  # one write: no key typed after it is echoed inside
        with open(go) as pipe:
            word = pipe.readline().strip()
        if word == "readable":
            select.select([sys.stdin.fileno()], [], [], 30)

    Screen.before_prompt = before_prompt  # type: ignore[method-assign]


if __name__ == "__main__":
    go = sys.argv.pop(1)
    if not os.path.exists(go):
        sys.exit(f"no pipe {go}")
    hold(go)
    run_and_exit()
