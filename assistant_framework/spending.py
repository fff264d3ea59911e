"""Spending caps: what each model runner used today and this month, and whether it may be asked again.

Per runner, ``limits`` (``daily_tokens``, ``monthly_tokens``, ``daily_cost``, ``monthly_cost``) and
``price`` (per million input, output and cached input tokens). The day and the month are those of
``runtime.timezone`` at the ledger's clock. Every answered call adds what the server reported (prompt
plus completion tokens, the cost from the price); a server that reports no usage is counted from its text
(``assistant_framework/tokens.py``) and the ledger says those counts are estimated.

Before each call the client asks ``hold`` with the call's own estimate (``call_estimate``: its prompt plus
the bound of its answer): a runner the call would take past a cap (or that has reached one) is refused and
the next runner is asked; background work (``llm/slots.background_calls``) is refused past
``BACKGROUND_SHARE`` of a cap so the owner's own turns keep the rest. A call that goes holds its estimate
until it is recorded, so calls running at once cannot pass a cap together. ``capped`` is called once per
runner, cap and period: the first time a turn's call is refused for that cap, or a call reached it (the
runtime tells the owner). The counts live in ``state/spending.json``, read and written under the file's lock
on each call (the bot and ``assistant eval``/``trace replay`` count into the same file; written without an
fsync: a power loss may forget the last calls' counts; a broken file starts the counts again from zero).
The model client records (messaging_llm_bot/llm/client.py); /stats, the web Usage page and doctor read
(``cap_rows``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Callable
from zoneinfo import ZoneInfo

from assistant_framework.config.settings import LLMSettings, RunnerSettings
from assistant_framework.tokens import estimate_tokens
from assistant_framework.workspace import Workspace

log = logging.getLogger(__name__)

STATE_FILE = "state/spending.json"
#: Background work stops at this share of any cap.
BACKGROUND_SHARE = 0.8
CAPS = ("daily_tokens", "monthly_tokens", "daily_cost", "monthly_cost")
#: Tokens a chat template adds around each message (its role markers), in a call's estimate.
MESSAGE_TOKENS = 4
#: Tokens of one picture in a call's estimate: a photo is downscaled to ``llm.image_max_side`` (1,568 px) and
#: vision models take from ~256 (Gemma 3) through ~765 (OpenAI's tiles) to ~1,600-3,300 (w·h/750) tokens for it.
IMAGE_TOKENS = 1600
#: The answer's bound in a call's estimate when the request sets none: the default of ``llm.max_tokens``
#: (a request without a bound may answer longer, and then passes a cap by the rest).
DEFAULT_ANSWER_TOKENS = int(next(f.default for f in fields(LLMSettings) if f.name == "max_tokens"))  # type: ignore[arg-type]


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


@dataclass(frozen=True)
class CallTokens:
    """The tokens of one call: as the server reported them (None: not reported), or estimated."""

    prompt: int | None = None
    completion: int | None = None
    cached: int | None = None

    @property
    def reported(self) -> bool:
        return self.prompt is not None or self.completion is not None

    @property
    def total(self) -> int:
        return (self.prompt or 0) + (self.completion or 0)


@dataclass(eq=False)
class Hold:
    """A call's estimate held against its runner's caps while the call runs."""

    runner: str
    tokens: int
    cost: float


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


def _message_tokens(message: Mapping) -> int:
    """A message's estimated tokens: its text, the arguments of its tool calls, ``IMAGE_TOKENS`` a picture and
    ``MESSAGE_TOKENS`` for the chat template."""
    content = message.get("content")
    pictures = 0
    if isinstance(content, list):
        parts = [p for p in content if isinstance(p, dict)]
        text = "".join(str(p.get("text") or "") for p in parts)
        pictures = sum(1 for p in parts if p.get("type") == "image_url")
    else:
        text = str(content or "")
    calls = message.get("tool_calls")
    text += json.dumps(calls, ensure_ascii=False) if calls else ""
    return estimate_tokens(text) + pictures * IMAGE_TOKENS + MESSAGE_TOKENS


def call_estimate(body: Mapping) -> CallTokens:
    """What one Chat Completions request may cost, before it is sent: its prompt (each message's text and pictures,
    the tool specs, ``MESSAGE_TOKENS`` a message) and its answer's bound (``max_tokens`` or
    ``max_completion_tokens``; without either, ``DEFAULT_ANSWER_TOKENS``). The one estimate of a call: the caps'
    check uses it, and a call whose server reports no usage is counted with its prompt."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    prompt = sum(_message_tokens(m) for m in messages)
    if body.get("tools"):
        prompt += estimate_tokens(json.dumps(body["tools"], ensure_ascii=False))
    bounds = [
        v
        for k in ("max_tokens", "max_completion_tokens")
        if isinstance(v := body.get(k), int) and not isinstance(v, bool)
    ]
    return CallTokens(prompt=max(1, prompt), completion=max(bounds) if bounds else DEFAULT_ANSWER_TOKENS)


def _fresh(row: dict, day: str, month: str) -> dict:
    """The runner's counts with the periods that ended set back to zero (changes ``row``)."""
    if row.get("day") != day:
        row.update(day=day, day_tokens=0, day_cost=0.0, day_estimated=False, day_refused={})
    if row.get("month") != month:
        row.update(month=month, month_tokens=0, month_cost=0.0, month_estimated=False, month_refused={})
    for period in ("day", "month"):
        if not isinstance(row.get(f"{period}_refused"), dict):
            row[f"{period}_refused"] = {}
    return row


def _period(cap: str) -> str:
    return "day" if cap.startswith("daily") else "month"


class SpendingLedger:
    """The per-runner counts of the current day and month, kept in the workspace (thread- and process-safe)."""

    def __init__(
        self,
        workspace: Workspace,
        timezone: str,
        *,
        clock: Callable[[], datetime] | None = None,
        capped: Callable[[CapUse, str | None], None] | None = None,
    ) -> None:
        """``clock``: the current time (tests set it to reach the next day); ``capped(cap, next runner)`` is
        called once per runner, cap and period when a turn's call is refused for the cap or a call reached it;
        without it nobody is told (and the first ledger that can tell still does)."""
        self.workspace = workspace
        self.zone = ZoneInfo(timezone)
        self.clock = clock
        self.capped = capped
        self._lock = threading.RLock()  # the holds, and a check with the hold it takes
        self._held: list[Hold] = []
        self._warned = False

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

    def _read(self) -> dict[str, dict]:
        try:
            data = self.workspace.read_json(STATE_FILE, default={})
        except (ValueError, UnicodeDecodeError, OSError) as err:
            if not self._warned:
                self._warned = True
                log.warning("%s is unreadable (%s); the spending counts start again from zero", STATE_FILE, err)
            data = {}
        runners = data.get("runners") if isinstance(data, dict) else None
        return {k: v for k, v in (runners or {}).items() if isinstance(v, dict)} if isinstance(runners, dict) else {}

    @contextmanager
    def _changing(self, name: str, now: datetime) -> Iterator[dict]:
        """The runner's row to change, read and written back under the file's lock: the bot and a CLI command
        (``eval skills``, ``trace replay``) count into the same file."""
        with self.workspace.lock(STATE_FILE):
            counts = self._read()
            row = _fresh(counts.setdefault(name, {}), *self.periods(now))
            yield row
            try:
                self.workspace.write_text(
                    STATE_FILE, json.dumps({"runners": counts}, indent=1, sort_keys=True) + "\n", durable=False
                )
            except OSError as err:  # the next call counts again from what the file holds
                log.warning("could not write %s: %s", STATE_FILE, err)

    def _uses(self, runner: RunnerSettings, row: dict, now: datetime, upcoming: CallTokens | None) -> list[CapUse]:
        with self._lock:
            held = [h for h in self._held if h.runner == runner.name]
        out = []
        for cap in CAPS:
            limit = getattr(runner.limits, cap)
            if limit is None:
                continue
            period = _period(cap)
            ahead: float
            coming: float
            if cap.endswith("tokens"):
                used, ahead = row[f"{period}_tokens"], float(sum(h.tokens for h in held))
                coming = float(upcoming.total) if upcoming else 0.0
            else:
                used, ahead = row[f"{period}_cost"], sum(h.cost for h in held)
                coming = call_cost(upcoming, runner) if upcoming else 0.0
            out.append(
                CapUse(
                    runner.name,
                    cap,
                    limit,
                    used,
                    self.resets(cap, now),
                    bool(row[f"{period}_estimated"]),
                    held=ahead,
                    upcoming=coming,
                    refused=int(row[f"{period}_refused"].get(cap) or 0),
                )
            )
        return out

    def uses(self, runner: RunnerSettings, upcoming: CallTokens | None = None) -> list[CapUse]:
        """Each cap ``runner`` has, with its use in the current period (checked for a call: ``upcoming``)."""
        now = self.now()
        row = _fresh(self._read().get(runner.name) or {}, *self.periods(now))
        return self._uses(runner, row, now, upcoming)

    def used(self, runner: str) -> dict:
        """The runner's counts of today and this month (``day_tokens``, ``month_cost``, ...)."""
        now = self.now()
        return _fresh(self._read().get(runner) or {}, *self.periods(now))

    def blocking(self, runner: RunnerSettings, background: bool, upcoming: CallTokens | None = None) -> CapUse | None:
        """The cap that keeps ``runner`` from being asked now: reached, or passed by the ``upcoming`` call (for
        background work: ``BACKGROUND_SHARE`` of it), or None."""
        if not runner.limits.any:
            return None
        share = BACKGROUND_SHARE if background else 1.0
        return next((use for use in self.uses(runner, upcoming) if use.blocks(share)), None)

    def hold(self, runner: RunnerSettings, upcoming: CallTokens, *, background: bool) -> Hold | CapUse:
        """Check a call before it is sent: the cap it would pass (nothing is held), or its ``Hold`` (the estimate
        is held until ``record`` or ``release``)."""
        with self._lock:
            blocked = self.blocking(runner, background, upcoming)
            if blocked is not None:
                return blocked
            hold = Hold(runner.name, upcoming.total, call_cost(upcoming, runner))
            self._held.append(hold)
            return hold

    def release(self, hold: Hold | None) -> None:
        """Drop a call's hold (it failed, or was counted)."""
        with self._lock:
            self._held = [h for h in self._held if h is not hold]

    def skipped(self, use: CapUse, next_runner: str | None) -> None:
        """A turn's call was kept from ``use.runner`` by ``use`` (``hold`` refused it): counted for /stats, and
        the owner is told once per cap and period (``next_runner``: who answers it instead)."""
        now = self.now()
        with self._changing(use.runner, now) as row:
            refused = row[f"{_period(use.cap)}_refused"]
            refused[use.cap] = int(refused.get(use.cap) or 0) + 1
            tell = self._tell_once(row, use.cap, now)
        log.info("llm runner %r skipped for its cap: %s", use.runner, capped_text(use, next_runner))
        if tell:
            self._tell(use, next_runner)

    def record(
        self,
        runner: RunnerSettings,
        reported: CallTokens,
        *,
        estimate: CallTokens | None = None,
        answer: str = "",
        hold: Hold | None = None,
        next_runner: str | None = None,
    ) -> None:
        """Add one answered call (its ``hold`` dropped); a server that reported no usage is counted from the
        ``estimate``'s prompt and the ``answer``'s text. Tells ``capped`` when the call reached a cap (once)."""
        estimated = not reported.reported
        if estimated:
            counted = CallTokens(max(1, (estimate.prompt or 0) if estimate else 0), estimate_tokens(answer))
        else:
            counted = reported
        cost = call_cost(counted, runner)
        now = self.now()
        reached = None
        try:
            with self._changing(runner.name, now) as row:
                for period in ("day", "month"):
                    row[f"{period}_tokens"] += counted.total
                    row[f"{period}_cost"] = round(row[f"{period}_cost"] + cost, 6)
                    row[f"{period}_estimated"] = bool(row[f"{period}_estimated"] or estimated)
                if runner.limits.any:
                    reached = next((use for use in self._uses(runner, row, now, None) if use.reached), None)
                tell = reached is not None and self._tell_once(row, reached.cap, now)
        finally:  # once the count is written: no moment where the call is neither held nor counted
            self.release(hold)
        if reached is None:
            return
        log.warning("llm runner %r reached its cap: %s", runner.name, reached.describe())
        if tell:
            self._tell(reached, next_runner)

    def _tell_once(self, row: dict, cap: str, now: datetime) -> bool:
        """True the first time in ``cap``'s period that someone can be told (marks it told; caller holds the file)."""
        if self.capped is None:
            return False
        told = row.get("told")
        told = told if isinstance(told, dict) else {}
        key = self.periods(now)[0 if cap.startswith("daily") else 1]
        if told.get(cap) == key:
            return False
        row["told"] = {**told, cap: key}
        return True

    def _tell(self, use: CapUse, next_runner: str | None) -> None:
        if self.capped is None:
            return
        try:
            self.capped(use, next_runner)
        except Exception:  # noqa: BLE001 - telling the owner must not fail the call
            log.exception("could not tell the owner about the cap of runner %r", use.runner)


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


def cap_rows(ledger: SpendingLedger, runners: tuple[RunnerSettings, ...] | list[RunnerSettings]) -> list[dict]:
    """Every cap of every runner as a row (runner, cap, limit, used, left, percent, reached, refused, resets,
    estimated), for /stats, the web Usage page and doctor."""
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
                    "left": round(use.left, 6),
                    "percent": round(use.share * 100, 1),
                    "reached": use.reached,
                    "refused": use.refused,
                    "resets": use.resets.isoformat(timespec="minutes"),
                    "estimated": use.estimated,
                    "text": use.describe(),
                }
            )
    return rows
