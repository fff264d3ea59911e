"""How setup talks: where it says and asks (``Console``), and what every step shares (``Step``)."""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from typing import Callable

from messaging_llm_bot.ops.setup.answers import Answers, Current


class SetupError(Exception):
    """A step that cannot be completed (bad token, no model server...): exit 2 with this message."""


@dataclass
class Console:
    """Where setup talks: ``say`` prints, ``ask`` reads a line, ``secret`` reads without echo."""

    say: Callable[[str], None] = print
    ask: Callable[[str], str] = input
    secret: Callable[[str], str] = getpass.getpass


class Step:
    """What every step shares: the flags, where it talks, what the config holds, and the settings to write
    (one list for the whole run: each step appends what it decided)."""

    def __init__(
        self, answers: Answers, console: Console, current: Current, settings: list[tuple[str, object]]
    ) -> None:
        self.a = answers
        self.io = console
        self.current = current
        self.settings = settings

    def _ask(self, question: str, default: str = "") -> str:
        if not self.a.interactive:
            return default
        shown = f" [{default}]" if default else ""
        reply = self.io.ask(f"{question}{shown}: ").strip()
        return reply or default

    def _ask_until(self, question: str, default: str, problem: Callable[[str], str | None]) -> str:
        """An answer that passes ``problem``: at a terminal a wrong one is said and asked again;
        without one (``--yes``) the default is checked and a wrong one ends the setup."""
        while True:
            reply = self._ask(question, default)
            wrong = problem(reply)
            if wrong is None:
                return reply
            if not self.a.interactive:
                raise SetupError(wrong)
            self.io.say(f"  {wrong}; try again.")
