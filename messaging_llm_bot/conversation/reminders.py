"""Deliver ReminderStore entries on time with the PTB JobQueue; missed ones go out late with a note.

Pure part: ``due_time``, ``delivery_text``, ``plan`` (aware datetimes, DST-correct via zoneinfo).
Shell: ``ReminderScheduler`` schedules every pending reminder with ``run_once``, re-reads the store
every ``poll_seconds`` for reminders the skill added, and marks each one delivered after sending; one
the chat refuses for good (``DeliveryRefused``) is marked failed, a temporary error retried at the next poll.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from assistant_framework.stores.provenance import is_untrusted
from assistant_framework.stores.records import Reminder
from messaging_llm_bot.conversation.markup import escape_markdown
from messaging_llm_bot.conversation.routes import channel_of

log = logging.getLogger(__name__)

POLL_SECONDS = 30.0
#: A reminder delivered later than this after its time carries the "(late: ...)" note.
LATE_AFTER = timedelta(seconds=90)
JOB_PREFIX = "reminder:"

#: Sends a reminder: True when it arrived, False to try again at the next poll; raises DeliveryRefused. With
#: ``ReminderScheduler(conversation=True)`` it also gets ``conversation=`` (the conversation the reminder was
#: set in, or None for a row without one).
SendFn = Callable[..., Awaitable[bool]]


class DeliveryRefused(Exception):
    """The chat refused the message for good (the user blocked the bot, the chat does not exist, not a Signal
    user): sending it again cannot help. The message is the reason, kept with the reminder or the job run
    (conversation/job_answer.py: the run is recorded failed)."""


#: Shown to the owner under an item saved from outside content (a forward, mail, page or file).
FROM_OUTSIDE = "(from a message, mail or page you received)"


def field(record: Any, name: str, default: Any = None) -> Any:
    """Read ``name`` from a store record that is a dict or an object (dataclass)."""
    if isinstance(record, dict):
        return record.get(name, default)
    return getattr(record, name, default)


def _zone(name: str | None, fallback: str = "UTC") -> ZoneInfo:
    for candidate in (name, fallback, "UTC"):
        if candidate:
            try:
                return ZoneInfo(candidate)
            except (ZoneInfoNotFoundError, ValueError):
                continue
    return ZoneInfo("UTC")


def due_time(reminder: Any, default_tz: str = "UTC") -> datetime:
    """The aware due instant: the ISO offset when present, else wall time in the reminder's timezone."""
    raw = field(reminder, "due_at")
    if isinstance(raw, datetime):
        moment = raw
    else:
        try:
            moment = datetime.fromisoformat(str(raw))
        except ValueError:
            raise ValueError(f"reminder {field(reminder, 'id')!r}: due_at {raw!r} is not an ISO date-time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_zone(field(reminder, "timezone"), default_tz))
    return moment


@dataclass
class Plan:
    """When to deliver a reminder and whether it is already late at planning time."""

    when: datetime
    late: bool


def plan(reminder: Any, now: datetime, default_tz: str = "UTC") -> Plan:
    """Schedule at the due time, or right now when the due time has passed (never dropped)."""
    due = due_time(reminder, default_tz)
    if due <= now:
        return Plan(when=now, late=now - due > LATE_AFTER)
    return Plan(when=due, late=False)


def delivery_text(reminder: Any, now: datetime, default_tz: str = "UTC") -> str:
    """The message for a reminder; with a late note in the reminder's local time when overdue."""
    text = str(field(reminder, "text") or "").strip() or "(reminder)"
    if is_untrusted({"untrusted": field(reminder, "untrusted")}):
        # Saved from a forward, mail or page: it must not read as the bot's own advice.
        text = f"{text}\n{FROM_OUTSIDE}"
    due = due_time(reminder, default_tz)
    if now - due <= LATE_AFTER:
        return f"⏰ {text}"
    local_due = due.astimezone(_zone(field(reminder, "timezone"), default_tz))
    local_now = now.astimezone(local_due.tzinfo)
    when = local_due.strftime("%H:%M") if local_due.date() == local_now.date() else local_due.strftime("%Y-%m-%d %H:%M")
    return f"⏰ {text}\n(late: was due {when})"


class ReminderScheduler:
    """Keeps the JobQueue in step with the ReminderStore and delivers reminders."""

    def __init__(
        self,
        store: Any,
        job_queue: Any,
        send: SendFn,
        *,
        default_tz: str = "UTC",
        poll_seconds: float = POLL_SECONDS,
        clock: Callable[[], datetime] | None = None,
        channel: str | None = None,
        channels: Callable[[], frozenset[str]] | None = None,
        conversation: bool = False,
    ) -> None:
        self.store = store
        self.conversation = conversation  # the send takes the reminder's conversation (Telegram: its topic)
        self.channel = channel  # only reminders set on this channel (conversation/routes.py); None: all
        self.channels = channels  # or only those of the channels running now (the process's one scheduler)
        self.job_queue = job_queue
        self.send = send
        self.default_tz = default_tz
        self.poll_seconds = poll_seconds
        self.clock = clock or (lambda: datetime.now(UTC))
        self._scheduled: dict[str, str] = {}  # reminder id -> due_at it was scheduled for
        self._delivering: set[str] = set()
        self._unreadable: dict[str, str] = {}  # reminder id -> due_at already reported as unreadable
        self._failing: dict[str, int] = {}  # reminder id -> failed tries so far (warned once, at the first)
        self.polls = 0  # reads of the store by the poll so far, each synced (a test waits for the next ones)

    def start(self) -> None:
        """Schedule everything pending now and poll the store for changes."""
        self.sync()
        self.job_queue.run_repeating(
            self._poll_job, interval=self.poll_seconds, first=self.poll_seconds, name="reminders:poll"
        )

    async def _poll_job(self, context: Any) -> None:
        self.sync(await asyncio.to_thread(self._pending_safely))
        self.polls += 1

    def _pending_safely(self) -> list[Reminder]:
        try:
            running = self.channels() if self.channels is not None else None
            return [
                r
                for r in self.store.pending()
                if (self.channel is None or channel_of(field(r, "chat_id")) == self.channel)
                and (running is None or channel_of(field(r, "chat_id")) in running)
            ]
        except Exception as err:  # noqa: BLE001 - a damaged store must not stop the bot
            log.warning("reminders: cannot read the reminder store: %s", err)
            return []

    def sync(self, reminders: list[Reminder] | None = None) -> int:
        """Schedule new or changed pending reminders, cancel removed ones; returns how many were scheduled."""
        now = self.clock()
        if reminders is None:
            reminders = self._pending_safely()
        pending: dict[str, Reminder] = {}
        for reminder in reminders:  # of rows sharing an id (copied by hand) the first: the one delivered first
            if field(reminder, "id") is not None:
                pending.setdefault(str(field(reminder, "id")), reminder)
        for rid in list(self._scheduled):
            if rid not in pending and rid not in self._delivering:
                self._cancel(rid)
        added = 0
        for rid, reminder in pending.items():
            due_raw = str(field(reminder, "due_at"))
            if self._scheduled.get(rid) == due_raw or rid in self._delivering:
                continue
            try:
                when = plan(reminder, now, self.default_tz).when
            except ValueError as err:
                if self._unreadable.get(rid) != due_raw:  # once, not at every poll
                    log.warning("reminders: skipping %s", err)
                    self._unreadable[rid] = due_raw
                continue
            self._cancel(rid)
            # A past time means "now" to the JobQueue; a datetime keeps DST right (it is an instant).
            self.job_queue.run_once(self._deliver_job, when=when if when > now else 0, data=rid, name=JOB_PREFIX + rid)
            self._scheduled[rid] = due_raw
            added += 1
        return added

    def _cancel(self, rid: str) -> None:
        self._scheduled.pop(rid, None)
        for job in self.job_queue.get_jobs_by_name(JOB_PREFIX + rid):
            job.schedule_removal()

    async def _deliver_job(self, context: Any) -> None:
        await self.deliver(str(context.job.data))

    async def deliver(self, rid: str) -> bool:
        """Send one reminder if it is still pending and mark it delivered; True when sent."""
        self._delivering.add(rid)
        try:
            current = next(
                (r for r in await asyncio.to_thread(self._pending_safely) if str(field(r, "id")) == rid), None
            )
            if current is None:
                return False  # deleted or already delivered meanwhile
            now = self.clock()
            if due_time(current, self.default_tz) > now + timedelta(seconds=1):
                return False  # moved to a later time; the next sync schedules it
            # The frontends send notices as Markdown; a reminder's text is shown as typed.
            text = escape_markdown(delivery_text(current, now, self.default_tz))
            where = {"conversation": field(current, "conversation_id")} if self.conversation else {}
            try:
                sent = await self.send(field(current, "chat_id"), text, **where)
            except DeliveryRefused as err:
                await asyncio.to_thread(self.store.mark_failed, rid, str(err), now)
                log.warning("reminders: %s was refused for good (%s); marked failed, not sent again", rid, err)
                return False
            if sent:
                await asyncio.to_thread(self.store.mark_delivered, rid, now)
                tries = self._failing.pop(rid, 0)
                if tries:
                    log.info("reminders: %s delivered after %d failed tries", rid, tries)
            else:
                tries = self._failing[rid] = self._failing.get(rid, 0) + 1
                log.log(
                    logging.WARNING if tries == 1 else logging.INFO,
                    "reminders: delivery of %s failed (try %d); retrying at each poll until it arrives",
                    rid,
                    tries,
                )
            return sent
        finally:
            self._delivering.discard(rid)
            self._scheduled.pop(rid, None)
