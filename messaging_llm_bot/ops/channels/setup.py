"""What a channel gives ``assistant setup``: its flags and its steps (docs/channels.md, "Writing a channel").

A channel that can be set up has ``ops/channels/<name>/setup.py`` with ``add_arguments(parser)`` (its flags, e.g.
``--email ADDRESS``) and ``steps(setup: ChannelSetup) -> None``: it asks (or takes its flags), checks each
answer against its server, and appends the settings to write; nothing is written until the whole run passed
(the model's test turn). ops/setup finds the module by the registry's name (conversation/routes.py) and runs
the channels' steps first, in the registry's order: ops/ and cli/ name no channel.

What channels with a token share is here too: a configured secret kept with Enter or replaced, a secret tried
until it works (``Steps.secret_until_works``), and the owner's id read from their first one-to-one message to
the bot (``Steps.first_sender``; ``--discord find``, ``--slack-owner find``: ``OptInSteps.owner``).
"""

from __future__ import annotations

import argparse
import getpass
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from assistant_framework.json_types import JsonObject
from messaging_llm_bot.ops.channels import channel_parts


class Flags(Protocol):
    """Where a channel adds its flags: the setup's parser, or a group of it."""

    def add_argument(self, *names: str, **options: Any) -> argparse.Action: ...


class SetupError(Exception):
    """A step that cannot be completed (bad token, no server...): setup exits 2 with this message, writing nothing."""


#: The account flag's value that reads the owner's id from their first one-to-one message (``--discord find``).
FIND = "find"


@dataclass(frozen=True)
class FirstSender:
    """Someone who wrote to the bot one to one: their id on the platform, their name and their words."""

    id: str
    name: str
    text: str


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

    def section(self, name: str) -> JsonObject:
        """What the config's section ``name`` holds now (empty when none)."""
        found = self.configured.get(name)
        return found if isinstance(found, dict) else {}


class Steps:
    """What a channel's steps share: its flags (``a``), the dialog (``io``), the settings to append."""

    def __init__(self, setup: ChannelSetup) -> None:
        self.a = setup.flags
        self.io = setup.dialog
        self.settings = setup.settings
        self.again = setup.again

    def _ask(self, question: str, default: str = "") -> str:
        return self.io.answer(question, default)

    def kept_or_new(self, label: str, what: str) -> str | None:
        """A ``what`` ("bot token") the config holds, kept (None: also without a terminal) or replaced by one
        pasted at the terminal."""
        if not self.io.interactive:
            return None
        self.io.say(f"{label}: a {what} is configured; press Enter to keep it, or paste a new one.")
        return self.io.secret(f"{what.capitalize()} (empty: keep the current one): ").strip() or None

    def secret_until_works(
        self, label: str, first: str | None, ask: Callable[[], str], problem: Callable[[str], str], *, kept: bool
    ) -> str | None:
        """A secret ``problem`` finds nothing wrong with (its form, then a call with it: why not, or ""): ``first``
        tried first, then at a terminal each one ``ask`` reads (empty: none, None). Without a terminal a refused one
        ends the setup (SetupError); a refused ``kept`` one (the configured one, kept) is kept as it is (None)."""
        secret = first
        while True:
            if secret is None:
                secret = ask().strip() if self.io.interactive else ""
                if not secret:
                    return None
            wrong = problem(secret)
            if not wrong:
                return secret
            if kept:
                self.io.say(f"{label}: the configured one: {wrong}; kept as it is.")
                return None
            if not self.io.interactive:
                raise SetupError(f"{label}: {wrong}")
            self.io.say(f"{label}: {wrong}")
            secret = None

    def first_sender(self, label: str, read: Callable[[float], list[FirstSender]], flag: str, to: str) -> FirstSender:
        """Who sent the bot (``to``: "@name") the first one-to-one message within ``--wait`` seconds (``read``: who
        wrote, waiting at most the seconds given); of several, the one the user picks (without a terminal, the
        ``flag`` is asked for). ``flag`` with the id found is said again when nothing is written."""
        self.io.say(f"Now send any message to {to} from your own {label} account (waiting up to {self.a.wait:g} s)...")
        deadline = time.monotonic() + self.a.wait
        while True:
            found = read(max(0.0, deadline - time.monotonic()))
            if found:
                chosen = self._pick(label, found, flag)
                self.again.append(f"{flag} {chosen.id}")
                return chosen
            if time.monotonic() >= deadline:
                raise SetupError(f"{label}: no message arrived; run setup again, or pass {flag} ID")

    def _pick(self, label: str, found: list[FirstSender], flag: str) -> FirstSender:
        if len(found) > 1 and not self.io.interactive:
            names = ", ".join(f"{s.name} ({s.id})" for s in found)
            raise SetupError(f"{label}: several people wrote to the bot ({names}); pass {flag} ID")
        said = [f"{s.name} (id {s.id}): {s.text[:40]!r}" for s in found]
        if len(found) == 1:
            self.io.say(f"{label}: got a message from {said[0]}")
            return found[0]
        return found[self.io.choose("Which one is you", said)]


@dataclass(frozen=True)
class Form:
    """What an id of a platform looks like (``pattern``), and what is said after one that does not (``wrong``:
    "is not a Discord user id (...)")."""

    pattern: re.Pattern[str]
    wrong: str

    def checked(self, value: str) -> str:
        """``value`` when it has the form, else a SetupError that quotes it."""
        if not self.pattern.fullmatch(value or ""):
            raise SetupError(f"{value!r} {self.wrong}")
        return value


@dataclass(frozen=True)
class Tried:
    """What a channel's check of a secret found: the lines to say, or why it does not work (``problem``)."""

    said: tuple[str, ...] = ()
    problem: str = ""


class OptInSteps(Steps):
    """A channel that is set up only when its flag names its account (``--discord USER_ID``): without it nothing
    is asked about the channel. A channel declares its display name (``label``), config section, the flag's
    attribute (``account``) and the account's form, and writes ``set_up``: the rest taken from its flags or
    asked, the secrets tried (``try_secret``), the settings appended (``enable``). Its ``setup.py`` gives the
    class's ``steps`` as its own."""

    label: ClassVar[str]  # "Discord": before each line it says, and in setup's closing line
    reached_as: ClassVar[str] = ""  # in setup's closing line when not the label ("email")
    section: ClassVar[str]  # "discord"
    account: ClassVar[str]  # the flag's attribute ("discord_owner")
    form: ClassVar[Form]
    finds_owner: ClassVar[bool] = False  # the flag may say ``find``: the owner's first message read (``owner``)

    def __init__(self, setup: ChannelSetup) -> None:
        super().__init__(setup)
        #: What the channel's section holds now (the user's values, ``${NAME}`` not read).
        self.configured = setup.section(self.section)
        self.reached = setup.reached

    @classmethod
    def add_account(cls, parser: Flags, flag: str, metavar: str, help: str) -> None:
        """The flag that names the account and so sets the channel up (its value in ``account``)."""
        parser.add_argument(flag, dest=cls.account, metavar=metavar, help=help)

    @classmethod
    def steps(cls, setup: ChannelSetup) -> None:
        """Set up the channel when its flag is given (a SetupError when the account has not the form)."""
        steps = cls(setup)
        account = getattr(steps.a, steps.account)
        if account:
            steps.set_up(account if account == FIND and cls.finds_owner else steps.form.checked(account))
            steps.reached.append(steps.reached_as or steps.label)

    def set_up(self, account: str) -> None:
        """The channel's own steps, for the given account."""
        raise NotImplementedError

    def try_secret(
        self, env: str, what: str, check: Callable[[str], Tried], hint: str, later: str = "then tries it"
    ) -> None:
        """The secret in the variable ``env`` (``what`` it holds: "the bot token") tried by ``check`` when it is
        set: its lines said, or a SetupError naming what to check (``hint``) in which variable. When the variable
        is not set, the user is told to set it before the bot runs (``later``: what ``make doctor`` then does)."""
        value = os.environ.get(env, "")
        if not value:
            self.io.say(f"{self.label}: set {env} to {what} before `make run`; `make doctor` {later}.")
            return
        tried = check(value)
        if tried.problem:
            raise SetupError(f"{tried.problem}; check {hint} in {env}")
        for line in tried.said:
            self.io.say(f"{self.label}: {line}")

    def owner(self, account: str, env: str, read: Callable[[str, float], list[FirstSender]], flag: str) -> str:
        """``account`` as given, or with ``find`` the id of the first one-to-one message sent to the bot within
        ``--wait`` seconds (``read``: who wrote, with the secret in the variable ``env``, waiting at most the
        seconds given)."""
        if account != FIND:
            return account
        secret = os.environ.get(env, "")
        if not secret:
            raise SetupError(f"{self.label}: set {env} to read your first message to the bot, or give your id")
        return self.first_sender(self.label, lambda seconds: read(secret, seconds), flag, "the bot").id

    def enable(self, values: dict[str, object]) -> None:
        """``values`` (keys in the channel's section; a None value is left out, so its default stays) appended
        to the settings, then ``<section>.enabled`` last (the config refuses an enabled channel without them)."""
        self.settings += [(f"{self.section}.{key}", value) for key, value in values.items() if value is not None]
        self.settings.append((f"{self.section}.enabled", True))

    def listens(self, port: int, path: str) -> tuple[str, str]:
        """(the path, host:port) where the bot's listener takes the platform's requests: the configured
        ``webhook``'s, else the defaults given (``127.0.0.1``)."""
        hook = self.configured.get("webhook")
        hook = hook if isinstance(hook, dict) else {}
        return str(hook.get("path", path)), f"{hook.get('listen', '127.0.0.1')}:{hook.get('port', port)}"


@dataclass(frozen=True)
class SetupHooks:
    """One channel's part of the setup, from its ``setup.py``."""

    channel: str
    add_arguments: Callable[[Flags], None]
    steps: Callable[[ChannelSetup], None]


def channel_setups() -> list[SetupHooks]:
    """The setup hooks of every channel of the registry that has a ``setup.py``, in the registry's order."""
    return [SetupHooks(name, module.add_arguments, module.steps) for name, module in channel_parts("setup")]


def add_channel_flags(parser: argparse.ArgumentParser) -> None:
    """Every channel's flags of ``assistant setup``, a group each, in the registry's order, after the flags they
    share."""
    shared = parser.add_argument_group("every channel (ops/channels/setup.py)")
    shared.add_argument(
        "--wait",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="how long to wait for your first message to the bot, to read your id from it (default 120)",
    )
    for hooks in channel_setups():
        hooks.add_arguments(parser.add_argument_group(f"{hooks.channel} (ops/channels/{hooks.channel}/setup.py)"))


def default_flags() -> argparse.Namespace:
    """The channels' flags as when none is given (the setup ``make run`` offers)."""
    parser = argparse.ArgumentParser(add_help=False)
    add_channel_flags(parser)
    return parser.parse_args([])
