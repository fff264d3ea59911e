"""The ledger: each runner's counts of the current day and month in ``state/spending.json`` (read and written
under the file's lock on each call), the holds of calls in flight, the counts a turn writes after its reply,
and the caps' rows for the views."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal, NamedTuple, TypedDict, cast
from zoneinfo import ZoneInfo

from assistant_framework.config.settings import RunnerSettings
from assistant_framework.spending.calls import CallTokens, call_cost
from assistant_framework.spending.caps import BACKGROUND_SHARE, CAPS, CapRow, CapUse, capped_text
from assistant_framework.tokens import estimate_tokens
from assistant_framework.workspace import Workspace

log = logging.getLogger(__name__)

STATE_FILE = "state/spending.json"


@dataclass(eq=False)
class Hold:
    """A call's estimate held against its runner's caps while the call runs."""

    runner: str
    tokens: int
    cost: float


@dataclass(frozen=True)
class _Count:
    """An answered call's count, kept in memory until the file is written (``SpendingLedger.after_reply``)."""

    runner: RunnerSettings
    tokens: int
    cost: float
    estimated: bool
    next_runner: str | None


class RunnerCounts(TypedDict, total=False):
    """One runner's counts in ``state/spending.json`` (``{"runners": {name: counts}}``): the current day's and
    month's tokens and cost, whether some were estimated, the calls refused per cap, and the period each cap's
    owner was last told of (``told``: cap -> day or month)."""

    day: str
    day_tokens: int
    day_cost: float
    day_estimated: bool
    day_refused: dict[str, int]
    month: str
    month_tokens: int
    month_cost: float
    month_estimated: bool
    month_refused: dict[str, int]
    told: dict[str, str]


#: A period of the counts: the day (``YYYY-MM-DD``) or the month (``YYYY-MM``).
Period = Literal["day", "month"]


class PeriodKeys(NamedTuple):
    """The keys of one period's counts in a ``RunnerCounts``."""

    period: Period
    tokens: Literal["day_tokens", "month_tokens"]
    cost: Literal["day_cost", "month_cost"]
    estimated: Literal["day_estimated", "month_estimated"]
    refused: Literal["day_refused", "month_refused"]


DAY = PeriodKeys("day", "day_tokens", "day_cost", "day_estimated", "day_refused")
MONTH = PeriodKeys("month", "month_tokens", "month_cost", "month_estimated", "month_refused")
PERIODS = (DAY, MONTH)


def _fresh(row: RunnerCounts, day: str, month: str) -> RunnerCounts:
    """The runner's counts with the periods that ended set back to zero (changes ``row``)."""
    for keys, current in ((DAY, day), (MONTH, month)):
        if row.get(keys.period) != current:
            row[keys.period] = current
            row[keys.tokens] = 0
            row[keys.cost] = 0.0
            row[keys.estimated] = False
            row[keys.refused] = {}
    for keys in PERIODS:
        if not isinstance(row.get(keys.refused), dict):
            row[keys.refused] = {}
    return row


def _period(cap: str) -> PeriodKeys:
    return DAY if cap.startswith("daily") else MONTH


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
        # The holds and the counts not written yet, and a check with the hold it takes; taken before the file's
        # lock, so a read never sees a count both in the file and still in memory.
        self._lock = threading.RLock()
        self._held: list[Hold] = []
        #: Answered calls counted in memory only (``after_reply``): every read and check here adds them, and the
        #: next write of the file writes them.
        self._unwritten: list[_Count] = []
        self._deferring = threading.local()
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

    def _read(self, now: datetime | None = None) -> dict[str, RunnerCounts]:
        """The runners' counts: the file's, and the answered calls not written to it yet."""
        with self._lock:
            counts = self._read_file()
            if self._unwritten:
                now = now or self.now()
                for count in self._unwritten:
                    self._add(counts, count, now)
            return counts

    def _read_file(self) -> dict[str, RunnerCounts]:
        """The runners' counts as the file holds them (an object per runner; a value edited by hand is taken as
        it is, as the stores take their rows)."""
        try:
            data = self.workspace.read_json(STATE_FILE, default={})
        except (ValueError, UnicodeDecodeError, OSError) as err:
            if not self._warned:
                self._warned = True
                log.warning("%s is unreadable (%s); the spending counts start again from zero", STATE_FILE, err)
            data = {}
        runners = data.get("runners") if isinstance(data, dict) else None
        if not isinstance(runners, dict):
            return {}
        return {k: cast(RunnerCounts, v) for k, v in runners.items() if isinstance(v, dict)}

    @contextmanager
    def _changing(self, name: str | None, now: datetime) -> Iterator[RunnerCounts]:
        """The runner's row to change (``name`` None: none), read and written back under the file's lock with the
        counts not written yet: the bot and a CLI command (``eval skills``, ``trace replay``) count into the same
        file. The owner is told of a cap one of those counts reached once the file is written."""
        told: list[tuple[CapUse, str | None]] = []
        with self._lock, self.workspace.lock(STATE_FILE):
            counts = self._read_file()
            for count in self._unwritten:
                reached, tell = self._add(counts, count, now)
                if reached is not None:
                    log.warning("llm runner %r reached its cap: %s", count.runner.name, reached.describe())
                    if tell:
                        told.append((reached, count.next_runner))
            self._unwritten = []  # written below (a failed write loses them, as it loses a count made now)
            row = _fresh(counts.setdefault(name, {}), *self.periods(now)) if name is not None else RunnerCounts()
            yield row
            try:
                self.workspace.write_text(
                    STATE_FILE, json.dumps({"runners": counts}, indent=1, sort_keys=True) + "\n", durable=False
                )
            except OSError as err:  # the next call counts again from what the file holds
                log.warning("could not write %s: %s", STATE_FILE, err)
        for use, next_runner in told:
            self._tell(use, next_runner)

    def _add(self, counts: dict[str, RunnerCounts], count: _Count, now: datetime) -> tuple[CapUse | None, bool]:
        """Add ``count`` to its runner's row in ``counts``: the cap it reached, and whether to tell the owner now
        (marked told in the row)."""
        row = _fresh(counts.setdefault(count.runner.name, {}), *self.periods(now))
        for keys in PERIODS:
            row[keys.tokens] += count.tokens
            row[keys.cost] = round(row[keys.cost] + count.cost, 6)
            row[keys.estimated] = bool(row[keys.estimated] or count.estimated)
        if not count.runner.limits.any:
            return None, False
        reached = next((use for use in self._uses(count.runner, row, now, None) if use.reached), None)
        return reached, reached is not None and self._tell_once(row, reached.cap, now)

    @contextmanager
    def after_reply(self) -> Iterator[None]:
        """Within the block, this thread's answered calls are counted in memory, their holds dropped at once
        (every read and check of this ledger adds them, so caps hold exactly as before); the block's end, or
        any earlier write, writes them to the file. A turn's reply goes out without waiting for that write."""
        self._deferring.on = True
        try:
            yield
        finally:
            self._deferring.on = False
            try:
                self.flush()
            except Exception:  # noqa: BLE001 - bookkeeping must not cost the turn; the next write takes them along
                log.exception("could not write the spending counts to %s", STATE_FILE)

    def flush(self) -> None:
        """Write the counts kept in memory (``after_reply``) to the file."""
        if self._unwritten:
            with self._changing(None, self.now()):
                pass

    def _uses(
        self, runner: RunnerSettings, row: RunnerCounts, now: datetime, upcoming: CallTokens | None
    ) -> list[CapUse]:
        with self._lock:
            held = [h for h in self._held if h.runner == runner.name]
        out = []
        for cap in CAPS:
            limit = getattr(runner.limits, cap)
            if limit is None:
                continue
            keys = _period(cap)
            used: float
            ahead: float
            coming: float
            if cap.endswith("tokens"):
                used, ahead = row[keys.tokens], float(sum(h.tokens for h in held))
                coming = float(upcoming.total) if upcoming else 0.0
            else:
                used, ahead = row[keys.cost], sum(h.cost for h in held)
                coming = call_cost(upcoming, runner) if upcoming else 0.0
            out.append(
                CapUse(
                    runner.name,
                    cap,
                    limit,
                    used,
                    self.resets(cap, now),
                    bool(row[keys.estimated]),
                    held=ahead,
                    upcoming=coming,
                    refused=int(row[keys.refused].get(cap) or 0),
                )
            )
        return out

    def uses(self, runner: RunnerSettings, upcoming: CallTokens | None = None) -> list[CapUse]:
        """Each cap ``runner`` has, with its use in the current period (checked for a call: ``upcoming``)."""
        now = self.now()
        row = _fresh(self._read(now).get(runner.name) or {}, *self.periods(now))
        return self._uses(runner, row, now, upcoming)

    def used(self, runner: str) -> RunnerCounts:
        """The runner's counts of today and this month (``day_tokens``, ``month_cost``, ...)."""
        now = self.now()
        return _fresh(self._read(now).get(runner) or {}, *self.periods(now))

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
            refused = row[_period(use.cap).refused]
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
        whole_estimate: bool = False,
    ) -> None:
        """Add one answered call (its ``hold`` dropped); a server that reported no usage is counted from the
        ``estimate``'s prompt and the ``answer``'s text. ``whole_estimate``: ``reported`` is the estimate of a
        call that was cut (its prompt and its answer's bound), counted as it is and marked estimated. Tells
        ``capped`` when the call reached a cap (once)."""
        estimated = whole_estimate or not reported.reported
        if whole_estimate:
            counted = reported
        elif estimated:
            counted = CallTokens(max(1, (estimate.prompt or 0) if estimate else 0), estimate_tokens(answer))
        else:
            counted = reported
        count = _Count(runner, counted.total, call_cost(counted, runner), estimated, next_runner)
        if getattr(self._deferring, "on", False):
            with self._lock:  # counted and no longer held in one step
                self._unwritten.append(count)
                self._held = [h for h in self._held if h is not hold]
            return
        now = self.now()
        try:
            with self._changing(runner.name, now) as row:
                reached, tell = self._add({runner.name: row}, count, now)
        finally:  # once the count is written: no moment where the call is neither held nor counted
            self.release(hold)
        if reached is None:
            return
        log.warning("llm runner %r reached its cap: %s", runner.name, reached.describe())
        if tell:
            self._tell(reached, next_runner)

    def _tell_once(self, row: RunnerCounts, cap: str, now: datetime) -> bool:
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


def cap_rows(ledger: SpendingLedger, runners: tuple[RunnerSettings, ...] | list[RunnerSettings]) -> list[CapRow]:
    """Every cap of every runner as a row (runner, cap, limit, used, left, percent, reached, refused, resets,
    estimated), for /stats, the web Usage page and doctor."""
    rows: list[CapRow] = []
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
