"""What reaches the owner's terminal carries no control sequence: a model's answer (or outside text it repeats)
holding ``ESC ] 52`` would set the clipboard, others set the window's title, clear the screen, hide text or, with a
carriage return, write over the line before it (a confirmation question among them). The terminal chat prints
through ``TerminalSafe``; line ends and tabs stay."""

from __future__ import annotations

import io
import re
from typing import TextIO, cast

#: An escape sequence whole (CSI, OSC up to its end, a two-character one), or any other C0 or C1 control character
#: but the line end and the tab.
_CONTROLS = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-_])?|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def without_controls(text: str) -> str:
    """``text`` with its control sequences and characters left out."""
    return _CONTROLS.sub("", text)


class TerminalSafe(io.TextIOBase):
    """A text stream writing ``without_controls`` of what it is given to ``out``. A sequence cut between two writes
    (an answer streamed in pieces) loses only its start, the rest shows as plain characters."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def write(self, text: str) -> int:
        self.out.write(without_controls(text))
        return len(text)

    def flush(self) -> None:
        self.out.flush()


def terminal_safe(out: TextIO) -> TextIO:
    """``out`` behind a ``TerminalSafe``."""
    return cast(TextIO, TerminalSafe(out))
