"""One spending cap of one runner as a call sees it (``CapUse``), and what the owner and a turn are told
when a runner is at a cap or a call would pass it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict

#: Background work stops at this share of any cap.
BACKGROUND_SHARE = 0.8
CAPS = ("daily_tokens", "monthly_tokens", "daily_cost", "monthly_cost")


class CapRow(TypedDict):
    """One cap of one runner as /stats, ``assistant usage --json``, the web Usage page and doctor show it
    (``ledger.cap_rows``: a ``CapUse`` rounded and described)."""

    runner: str
    cap: str  # one of CAPS
    limit: float
    used: float
    left: float
    percent: float  # used / limit * 100, one decimal
    reached: bool
    refused: int  # calls of turns this cap kept from the runner in this period
    resets: str  # ISO time to the minute, the period's end
    estimated: bool
    text: str  # CapUse.describe()


@dataclass(frozen=True)
class CapUse:
    """One cap of one runner: its limit, what is used in the current period and when that period ends.

    Checked for one call: ``upcoming`` is that call's estimate and ``held`` what calls running in this
    process hold (both in the cap's unit)."""

    runner: str
    cap: str  # one of CAPS
    limit: float
    used: float
    resets: datetime
    estimated: bool  # some of the counts of this period were estimated (the server reported no usage)
    held: float = 0.0
    upcoming: float = 0.0
    refused: int = 0  # calls of turns this cap kept from the runner in this period

    @property
    def share(self) -> float:
        """Used / limit (1.0 and more: reached; a limit of 0 is reached at once)."""
        return self.used / self.limit if self.limit > 0 else 1.0

    @property
    def reached(self) -> bool:
        return self.share >= 1.0

    @property
    def left(self) -> float:
        """What is left of the cap (0 when reached)."""
        return max(0.0, self.limit - self.used)

    def blocks(self, share: float = 1.0) -> bool:
        """True when the call would take the runner past ``share`` of the cap (or it is there already)."""
        return self.share >= share or self.used + self.held + self.upcoming > self.limit * share

    def amount(self, value: float) -> str:
        """``1,200`` for a token cap, ``0.25`` for a cost cap."""
        return f"{int(value):,}" if self.cap.endswith("tokens") else f"{value:.2f}"

    def describe(self) -> str:
        """``daily tokens 1,200 of 1,000`` (cost with two decimals)."""
        what = self.cap.replace("_", " ")
        return f"{what} {self.amount(self.used)} of {self.amount(self.limit)}" + (
            " (partly estimated)" if self.estimated else ""
        )


def capped_text(use: CapUse, next_runner: str | None) -> str:
    """The one notice to the owner when a runner reaches a cap, or a call would have passed it."""
    when = use.resets.strftime("%Y-%m-%d %H:%M")
    if use.reached:
        then = f"'{next_runner}' answers until then" if next_runner else "no other runner is left, so I can't answer"
        return f"The model runner '{use.runner}' reached its {use.describe()}; it is paused until {when}: {then}."
    then = f"'{next_runner}' answers such calls" if next_runner else "no other runner is left to answer such calls"
    return (
        f"The model runner '{use.runner}' has {use.amount(use.left)} left of its {use.describe()}, too little for "
        f"a call of about {use.amount(use.upcoming)}: {then} until {when}; smaller ones still go to '{use.runner}'."
    )


def none_left_text(uses: list[CapUse]) -> str:
    """The one sentence of a turn when every runner is at a cap or the call would pass it (nothing is sent)."""
    first = min(uses, key=lambda u: u.resets)
    names = ", ".join(dict.fromkeys(f"'{u.runner}'" for u in uses))
    why = "has reached its spending cap"
    if not all(u.reached for u in uses):
        why += " or has too little of it left for this request"
    back = first.resets.strftime("%Y-%m-%d %H:%M")
    return f"Every model runner ({names}) {why}, so nothing was sent; the first is back at {back}."
