"""Spending caps: what each model runner used today and this month, and whether it may be asked again.

Per runner, ``limits`` (``daily_tokens``, ``monthly_tokens``, ``daily_cost``, ``monthly_cost``) and
``price`` (per million input, output and cached input tokens). The day and the month are those of
``runtime.timezone`` at the ledger's clock. Every answered call adds what the server reported (prompt
plus completion tokens, the cost from the price); a server that reports no usage is counted from the
characters sent and received (about four a token) and the ledger says those counts are estimated.

A runner at a cap is skipped until its period ends (the next runner answers); background work
(``llm/slots.background_calls``) stops at ``BACKGROUND_SHARE`` of a cap so the owner's own turns keep
the rest. ``capped`` is called once per runner and period with the cap reached (the runtime tells the
owner). The counts live in ``state/spending.json`` (written without an fsync: a power loss may forget
the last calls' counts; a broken file starts the counts again from zero). The model client records
(messaging_llm_bot/llm/client.py); /stats, the web Usage page and doctor read (``cap_rows``).
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable
from zoneinfo import ZoneInfo

from assistant_framework.config.settings import RunnerSettings
from assistant_framework.workspace import Workspace

log = logging.getLogger(__name__)

STATE_FILE = "state/spending.json"
#: Background work stops at this share of any cap.
BACKGROUND_SHARE = 0.8
#: Characters per token when a server reports no usage.
CHARS_PER_TOKEN = 4
CAPS = ("daily_tokens", "monthly_tokens", "daily_cost", "monthly_cost")


@dataclass(frozen=True)
class CapUse:
    """One cap of one runner: its limit, what is used in the current period and when that period ends."""

    runner: str
    cap: str  # one of CAPS
    limit: float
    used: float
    resets: datetime
    estimated: bool  # some of the counts of this period were estimated (the server reported no usage)

    @property
    def share(self) -> float:
        """Used / limit (1.0 and more: reached; a limit of 0 is reached at once)."""
        return self.used / self.limit if self.limit > 0 else 1.0

    @property
    def reached(self) -> bool:
        return self.share >= 1.0

    def describe(self) -> str:
        """``daily tokens 1,200 of 1,000`` (cost with two decimals)."""
        what = self.cap.replace("_", " ")
        if self.cap.endswith("tokens"):
            amount = f"{int(self.used):,} of {int(self.limit):,}"
        else:
            amount = f"{self.used:.2f} of {self.limit:.2f}"
        return f"{what} {amount}" + (" (partly estimated)" if self.estimated else "")


@dataclass(frozen=True)
class CallTokens:
    """The tokens of one answered call, as the server reported them (None: not reported)."""

    prompt: int | None = None
    completion: int | None = None
    cached: int | None = None

    @property
    def reported(self) -> bool:
        return self.prompt is not None or self.completion is not None


def call_cost(tokens: CallTokens, runner: RunnerSettings) -> float:
    """The price of one call's tokens on ``runner`` (0 without a price)."""
    price = runner.price
    prompt = tokens.prompt or 0
    cached = min(tokens.cached or 0, prompt)
    cached_price = price.input_per_mtok if price.cached_input_per_mtok is None else price.cached_input_per_mtok
    return (
        (prompt - cached) * price.input_per_mtok
        + cached * cached_price
        + (tokens.completion or 0) * price.output_per_mtok
    ) / 1_000_000


def estimated_tokens(sent_chars: int, answer_chars: int) -> CallTokens:
    """Token counts from characters, for a server that reported none."""
    return CallTokens(max(1, sent_chars // CHARS_PER_TOKEN), max(0, answer_chars // CHARS_PER_TOKEN))


class SpendingLedger:
    """The per-runner counts of the current day and month, kept in the workspace (thread-safe)."""

    def __init__(
        self,
        workspace: Workspace,
        timezone: str,
        *,
        clock: Callable[[], datetime] | None = None,
        capped: Callable[[CapUse, str | None], None] | None = None,
    ) -> None:
        """``clock``: the current time (tests set it to reach the next day); ``capped(cap, next runner)`` is
        called once per runner and period when a cap is reached."""
        self.workspace = workspace
        self.zone = ZoneInfo(timezone)
        self.clock = clock
        self.capped = capped
        self._lock = threading.Lock()
        self._counts: dict[str, dict] | None = None

    # -- periods -------------------------------------------------------------

    def now(self) -> datetime:
        """The ledger's current time in ``runtime.timezone``."""
        moment = self.clock() if self.clock is not None else datetime.now(self.zone)
        return moment.astimezone(self.zone) if moment.tzinfo else moment.replace(tzinfo=self.zone)

    def periods(self, now: datetime | None = None) -> tuple[str, str]:
        """(today, this month) as ``YYYY-MM-DD`` and ``YYYY-MM``."""
        now = now or self.now()
        return now.date().isoformat(), now.strftime("%Y-%m")

    def resets(self, cap: str, now: datetime | None = None) -> datetime:
        """When the period of ``cap`` ends (midnight of the next day or month, in the time zone)."""
        now = now or self.now()
        if cap.startswith("daily"):
            following = now.date() + timedelta(days=1)
        else:
            following = (now.date().replace(day=1) + timedelta(days=32)).replace(day=1)
        return datetime(following.year, following.month, following.day, tzinfo=self.zone)

    # -- counts --------------------------------------------------------------

    def _load(self) -> dict[str, dict]:
        if self._counts is None:
            try:
                data = self.workspace.read_json(STATE_FILE, default={})
            except (ValueError, UnicodeDecodeError, OSError) as err:
                log.warning("%s is unreadable (%s); the spending counts start again from zero", STATE_FILE, err)
                data = {}
            runners = data.get("runners") if isinstance(data, dict) else None
            self._counts = {k: v for k, v in (runners or {}).items() if isinstance(v, dict)}
        return self._counts

    def _row(self, name: str, now: datetime) -> dict:
        """The runner's counts, the periods that ended set back to zero (caller holds the lock)."""
        day, month = self.periods(now)
        row = self._load().setdefault(name, {})
        if row.get("day") != day:
            row.update(day=day, day_tokens=0, day_cost=0.0, day_estimated=False)
        if row.get("month") != month:
            row.update(month=month, month_tokens=0, month_cost=0.0, month_estimated=False)
        return row

    def _save(self) -> None:
        try:
            self.workspace.write_text(
                STATE_FILE, json.dumps({"runners": self._counts}, indent=1, sort_keys=True) + "\n", durable=False
            )
        except OSError as err:  # the counts stay in memory; the next call writes them again
            log.warning("could not write %s: %s", STATE_FILE, err)

    def uses(self, runner: RunnerSettings) -> list[CapUse]:
        """Each cap ``runner`` has, with its use in the current period."""
        now = self.now()
        with self._lock:
            row = dict(self._row(runner.name, now))
        out = []
        for cap in CAPS:
            limit = getattr(runner.limits, cap)
            if limit is None:
                continue
            period = "day" if cap.startswith("daily") else "month"
            used = row[f"{period}_{'tokens' if cap.endswith('tokens') else 'cost'}"]
            out.append(CapUse(runner.name, cap, limit, used, self.resets(cap, now), bool(row[f"{period}_estimated"])))
        return out

    def used(self, runner: str) -> dict:
        """The runner's counts of today and this month (``day_tokens``, ``month_cost``, ...)."""
        with self._lock:
            return dict(self._row(runner, self.now()))

    def blocking(self, runner: RunnerSettings, background: bool) -> CapUse | None:
        """The cap that keeps ``runner`` from being asked now (reached; for background work at 80 %), or None."""
        if not runner.limits.any:
            return None
        share = BACKGROUND_SHARE if background else 1.0
        return next((use for use in self.uses(runner) if use.share >= share), None)

    def record(
        self,
        runner: RunnerSettings,
        reported: CallTokens,
        *,
        sent_chars: int,
        answer_chars: int,
        next_runner: str | None,
    ) -> None:
        """Add one answered call; tells ``capped`` when it made the runner reach a cap (once per period)."""
        estimated = not reported.reported
        counted = estimated_tokens(sent_chars, answer_chars) if estimated else reported
        tokens = (counted.prompt or 0) + (counted.completion or 0)
        cost = call_cost(counted, runner)
        now = self.now()
        with self._lock:
            row = self._row(runner.name, now)
            for period in ("day", "month"):
                row[f"{period}_tokens"] += tokens
                row[f"{period}_cost"] = round(row[f"{period}_cost"] + cost, 6)
                row[f"{period}_estimated"] = bool(row[f"{period}_estimated"] or estimated)
            self._save()
        if not runner.limits.any:
            return
        reached = next((use for use in self.uses(runner) if use.reached), None)
        if reached is None:
            return
        key = f"{reached.cap}:{self.periods(now)[0 if reached.cap.startswith('daily') else 1]}"
        with self._lock:
            row = self._row(runner.name, now)
            if row.get("told") == key:
                return
            row["told"] = key
            self._save()
        log.warning("llm runner %r reached its cap: %s", runner.name, reached.describe())
        if self.capped is not None:
            try:
                self.capped(reached, next_runner)
            except Exception:  # noqa: BLE001 - telling the owner must not fail the call that answered
                log.exception("could not tell the owner that runner %r reached its cap", runner.name)


def capped_text(use: CapUse, next_runner: str | None) -> str:
    """The one notice to the owner when a runner reaches a cap."""
    when = use.resets.strftime("%Y-%m-%d %H:%M")
    then = f"'{next_runner}' answers until then" if next_runner else "no other runner is left, so I can't answer"
    return f"The model runner '{use.runner}' reached its {use.describe()}; it is paused until {when}: {then}."


def none_left_text(uses: list[CapUse]) -> str:
    """The one sentence of a turn when every runner is at a cap (nothing is sent)."""
    first = min(uses, key=lambda u: u.resets)
    names = ", ".join(dict.fromkeys(f"'{u.runner}'" for u in uses))
    return (
        f"Every model runner ({names}) has reached its spending cap, so nothing was sent; "
        f"the first is back at {first.resets.strftime('%Y-%m-%d %H:%M')}."
    )


def cap_rows(ledger: SpendingLedger, runners: tuple[RunnerSettings, ...] | list[RunnerSettings]) -> list[dict]:
    """Every cap of every runner as a row (runner, cap, limit, used, percent, reached, resets, estimated), for
    /stats, the web Usage page and doctor."""
    rows = []
    for runner in runners:
        if not runner.limits.any:
            continue
        for use in ledger.uses(runner):
            rows.append(
                {
                    "runner": use.runner,
                    "cap": use.cap,
                    "limit": use.limit,
                    "used": round(use.used, 6),
                    "percent": round(use.share * 100, 1),
                    "reached": use.reached,
                    "resets": use.resets.isoformat(timespec="minutes"),
                    "estimated": use.estimated,
                    "text": use.describe(),
                }
            )
    return rows
