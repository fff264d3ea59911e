"""The operator CLI (``assistant``): one module per command group, each exposing ``register(subparsers)``.

``main`` builds the parser and runs a command; ``run`` starts the bot (also ``assistant-bot`` and
``python -m messaging_llm_bot``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from assistant_framework.config.sections import SectionError
from messaging_llm_bot.channels import RegistrationError

if TYPE_CHECKING:  # pragma: no cover - imports for type hints only
    from messaging_llm_bot.llm.client import LLMClient


class UsageError(Exception):
    """A wrong argument (a missing folder, an unknown name): the CLI prints it and exits 2."""


#: A channel's registration that cannot be used (docs/channels.md, "Writing a channel"): a Route without its
#: folder or file (``RegistrationError``), a declared section the config refuses (``SectionError``).
REGISTRATION_ERRORS = (RegistrationError, SectionError)


def registration_refused(error: Exception) -> int:
    """A wrong channel registration, said in its one sentence on stderr: exit status 2, as a config error (a
    service manager should not restart the bot for it), and no traceback for the channel's author to read."""
    print(f"error: {error}", file=sys.stderr)
    return 2


def int_range(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number in [low, high]: a value outside is a usage error (exit 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid whole number: {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(
                f"{value} is out of range ({low}..{high})" if high is not None else f"{value} is below {low}"
            )
        return value

    return parse


def refused_by_caps(llm: LLMClient) -> bool:
    """True when every runner of ``llm`` is at a spending cap: the sentence a turn gets is printed (the command
    then exits 1 having sent nothing)."""
    refusal = llm.refusal()
    if refusal is not None:
        print(refusal, file=sys.stderr)
    return refusal is not None
