"""The operator CLI (``assistant``): one module per command group, each exposing ``register(subparsers)``.

``main`` builds the parser and runs a command; ``run`` starts the bot (also ``assistant-bot`` and
``python -m messaging_llm_bot``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - imports for type hints only
    from messaging_llm_bot.llm.client import LLMClient


class UsageError(Exception):
    """A wrong argument (a missing folder, an unknown name): the CLI prints it and exits 2."""


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
