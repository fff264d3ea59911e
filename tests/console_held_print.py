"""``python -m tests.console_held_print GO ARGS``: ``python -m messaging_llm_bot ARGS`` with the terminal chat held
in the middle of printing a text above its prompt (inside prompt_toolkit's ``run_in_terminal``, which may switch
the terminal's mode for it): when a write to the terminal holds ``MARK``, the marker ``HELD`` is printed and the
chat goes on only once the test writes a line into the named pipe GO."""

from __future__ import annotations

import os

from prompt_toolkit.output.vt100 import Vt100_Output

from tests.console_window import run_held

MARK = "a reply held as it is printed"
HELD = "[held while printing]"


def hold(go: str) -> None:
    original = Vt100_Output.write_raw

    def write_raw(self: Vt100_Output, data: str) -> None:
        if MARK in data:
            os.write(2, f"{HELD}\n".encode())  # the terminal itself: sys.stderr is prompt_toolkit's proxy now
            with open(go) as pipe:
                pipe.readline()
        original(self, data)

    Vt100_Output.write_raw = write_raw  # type: ignore[method-assign]


if __name__ == "__main__":
    run_held(hold)
