"""What a channel gives ``assistant setup``: its flags and its steps (docs/channels.md, "Writing a channel").

A channel that can be set up has ``channels/<name>/setup.py`` with ``add_arguments(parser)`` (its flags, e.g.
``--email ADDRESS``) and ``steps(setup: ChannelSetup) -> None``: it asks (or takes its flags), checks each
answer against its server, and appends the settings to write; nothing is written until the whole run passed
(the model's test turn). ops/setup finds the module by the registry's name (conversation/routes.py) and runs
the channels' steps first, in the registry's order: ops/ and cli/ name no channel.
"""

from __future__ import annotations

import argparse
import getpass
import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from assistant_framework.json_types import JsonObject
from messaging_llm_bot.conversation.routes import channel_names


class Flags(Protocol):
    """Where a channel adds its flags: the setup's parser, or a group of it."""

    def add_argument(self, *names: str, **options: Any) -> argparse.Action: ...


class SetupError(Exception):
    """A step that cannot be completed (bad token, no server...): setup exits 2 with this message, writing nothing."""


@dataclass
class Dialog:
    """Where setup talks: ``say`` prints, ``ask`` reads a line, ``secret`` reads without echo; ``interactive``
    False (``--yes``, or no terminal): nothing is asked, the flags and defaults are taken."""

    say: Callable[[str], None] = print
    ask: Callable[[str], str] = input
    secret: Callable[[str], str] = getpass.getpass
    interactive: bool = True

    def answer(self, question: str, default: str = "") -> str:
        """The typed answer, or ``default`` (also when not interactive)."""
        if not self.interactive:
            return default
        shown = f" [{default}]" if default else ""
        reply = self.ask(f"{question}{shown}: ").strip()
        return reply or default

    def answer_until(self, question: str, default: str, problem: Callable[[str], str | None]) -> str:
        """An answer that passes ``problem``: at a terminal a wrong one is said and asked again; without one
        the default is checked and a wrong one ends the setup (SetupError)."""
        while True:
            reply = self.answer(question, default)
            wrong = problem(reply)
            if wrong is None:
                return reply
            if not self.interactive:
                raise SetupError(wrong)
            self.say(f"  {wrong}; try again.")

    def choose(self, question: str, options: list[str]) -> int:
        """The index of the option picked by its number (the options are listed first; the first when nothing
        is asked)."""
        for number, option in enumerate(options, 1):
            self.say(f"  {number}. {option}")

        def not_a_choice(choice: str) -> str | None:
            if choice.isdigit() and 1 <= int(choice) <= len(options):
                return None
            return f"no such choice: {choice!r} (a number from 1 to {len(options)})"

        return int(self.answer_until(question, "1", not_a_choice)) - 1


@dataclass
class ChannelSetup:
    """What a channel's steps get, and what they give back."""

    config: Path  # the config directory; its ``local/`` layer is where the settings go
    flags: argparse.Namespace  # the parsed flags, the channel's own among them (their defaults when not given)
    dialog: Dialog
    #: What the config holds now, without ``${NAME}`` read (the user's values to offer as defaults).
    configured: JsonObject
    #: (key, value) to write, in order; written only when the whole setup passed.
    settings: list[tuple[str, object]] = field(default_factory=list)
    #: Flags that would give again what this run found (``--owner-id 7``): said when nothing was written.
    again: list[str] = field(default_factory=list)
    #: Where the bot answers once written ("Telegram"): said in the closing line.
    reached: list[str] = field(default_factory=list)


class Steps:
    """What a channel's steps share: its flags (``a``), the dialog (``io``), the settings to append."""

    def __init__(self, setup: ChannelSetup) -> None:
        self.a = setup.flags
        self.io = setup.dialog
        self.settings = setup.settings

    def _ask(self, question: str, default: str = "") -> str:
        return self.io.answer(question, default)


@dataclass(frozen=True)
class SetupHooks:
    """One channel's part of the setup, from its ``setup.py``."""

    channel: str
    add_arguments: Callable[[Flags], None]
    steps: Callable[[ChannelSetup], None]


def channel_setups() -> list[SetupHooks]:
    """The setup hooks of every channel of the registry that has a ``setup.py``, in the registry's order."""
    found: list[SetupHooks] = []
    for name in channel_names():
        module = _setup_module(name)
        if module is not None:
            found.append(SetupHooks(name, module.add_arguments, module.steps))
    return found


def _setup_module(name: str) -> ModuleType | None:
    path = f"{__package__}.{name}.setup"
    return importlib.import_module(path) if importlib.util.find_spec(path) is not None else None


def add_channel_flags(parser: argparse.ArgumentParser) -> None:
    """Every channel's flags of ``assistant setup``, a group each, in the registry's order."""
    for hooks in channel_setups():
        hooks.add_arguments(parser.add_argument_group(f"{hooks.channel} (channels/{hooks.channel}/setup.py)"))


def default_flags() -> argparse.Namespace:
    """The channels' flags as when none is given (the setup ``make run`` offers)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_channel_flags(parser)
    return parser.parse_args([])
