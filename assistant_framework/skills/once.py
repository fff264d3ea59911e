"""Actions that leave the machine, each done once for the message a turn answers, whatever a replay's wording.

A skill that sends a mail, changes the owner's calendar or sends a file to the chat (``media/files_out.py``)
records each such action in its ledger (a JSONL file of the workspace) before the outside call: the message the
turn answers (``SkillContext.message_id`` in its chat, the inbox item for a file: the same when a restart answers
it again), the kind of action (``send``, ``create``), its target (the recipients, an event's uid, a file's path and
content; "" when the action has none) and a digest of its wording. A turn cut off by a kill is asked again after
the restart, and a real model samples: the replay may write the same mail with another subject. So a call is
matched to the records of its message, kind and target, never to its words alone, as a durable execution's replay:
the record of the same wording first, else the first record this run of the turn has not matched yet (the replay's
second send to Anna is the first run's second one). A matched call is answered from its record and does nothing;
a call beyond the records acts.

A call that failed (the server refused it, or could not be reached) is recorded failed and matches nothing: the
replay, or the same run, may try again. One begun and never finished (the kill came during the outside call) may
have gone out, and counts as done: at most once, never twice. A thing kept on this machine (a reminder, a job:
``made_once``) is looked for instead: its store keeps the record's key, and one the store lacks was never made.
A turn without a message (a served client's, a direct call) is never asked again: its records match only calls
of the same turn.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from assistant_framework.json_types import JsonObject
from assistant_framework.skills.support import context_now
from assistant_framework.workspace import Workspace

if TYPE_CHECKING:
    from assistant_framework.skills.spec import SkillContext

BEGUN, DONE, FAILED = "begun", "done", "failed"
#: The owner said no to the call when asked: a record of its own, matched by ``declined``, never by ``once``.
DECLINED = "declined"


class TurnActions:
    """What one run of a turn matched in the ledgers (``SkillContext.actions``; a new one for each run, so a
    replay starts matching from the first record again), and its own name when the turn answers no message."""

    def __init__(self) -> None:
        self.matched: set[str] = set()
        self.lock = threading.Lock()  # a timed-out call may still be running beside the next one
        self.token = uuid.uuid4().hex


@dataclass(frozen=True)
class Action:
    """One action a call asks for: what it is, whom it reaches, its wording (what a replay may change), and
    ``fields``: what its record keeps to say later what was done (recipients, subject, title)."""

    kind: str
    target: str
    wording: object
    fields: JsonObject = field(default_factory=dict)

    def digest(self) -> str:
        text = json.dumps(self.wording, ensure_ascii=False, sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Earlier:
    """The record a call matched: it was done (or begun: ``finished`` False) at ``time`` for this message."""

    time: datetime
    record: JsonObject
    finished: bool
    same_wording: bool


@dataclass(frozen=True)
class TurnRun:
    """One run of a turn as a ledger sees it: the message it answers (``scope``) and what the run matched."""

    scope: str
    actions: TurnActions


def turn_run(context: SkillContext) -> TurnRun:
    """A skill call's run: the message the turn answers, in its chat (the same in the turn run again after a
    restart); a turn without one is a scope of its own."""
    if context.message_id is None or context.message_id == "":
        return TurnRun(f"turn:{context.actions.token}", context.actions)
    return TurnRun(f"{context.place or context.conversation_id}:{context.message_id}", context.actions)


@dataclass(frozen=True)
class ActionLedger:
    """One skill's ledger of actions out (``mail/sent.jsonl``, ``calendar/changes.jsonl``) in ``workspace``."""

    workspace: Workspace
    path: str

    def earlier(self, run: TurnRun, action: Action) -> Earlier | None:
        """The record ``action`` matches for the turn's message, without matching it (the gate asks nobody
        about a call that will do nothing); None: the call would act."""
        return self._match(run, action)[0]

    def once(
        self,
        run: TurnRun,
        action: Action,
        act: Callable[[], tuple[str, JsonObject]],
        said: Callable[[Earlier], str],
        key: str = "",
    ) -> str:
        """``act()`` (the outside call: the sentence the model reads and what the record keeps of it) unless the
        call matches a record: then ``said(earlier)``, and nothing is done. Recorded before ``act``, under ``key``
        when given (what ``act`` stores carries it: ``made_once``)."""
        turn = run.actions
        with turn.lock:
            earlier, matched = self._match(run, action)
            if earlier is not None:
                turn.matched.add(matched)
                return said(earlier)
            key = key or uuid.uuid4().hex
            turn.matched.add(key)  # this run's own action: a later call of the run in other words is another one
            stamp = datetime.now(UTC).isoformat(timespec="seconds")
            row: JsonObject = {"key": key, "scope": run.scope, "kind": action.kind, "target": action.target,
                               "wording": action.digest(), "time": stamp, **action.fields}  # fmt: skip
            # Before the outside call: a crash after it can never do it twice (at most once, by design).
            self.workspace.append_jsonl(self.path, {**row, "status": BEGUN})
        try:
            sentence, kept = act()
        except Exception:
            # Nothing went out: the replay (or this run) may try again.
            self.workspace.append_jsonl(self.path, {**row, "status": FAILED})
            raise
        self.workspace.append_jsonl(self.path, {**row, **kept, "status": DONE, "result": sentence})
        return sentence

    def declined(self, run: TurnRun, action: Action) -> datetime | None:
        """When the owner declined a call of the turn's message of this kind and target (in any words: the replay
        rewords it), or None."""
        for row in self.workspace.read_jsonl(self.path):
            if isinstance(row, dict) and row.get("status") == DECLINED and _same_call(row, run.scope, action):
                return _when(row)
        return None

    def decline(self, run: TurnRun, action: Action) -> None:
        """The owner said no to ``action`` for the turn's message: kept, so the turn run again after a kill does
        not ask again (and does nothing)."""
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        self.workspace.append_jsonl(self.path, {"key": uuid.uuid4().hex, "scope": run.scope, "kind": action.kind,
                                                "target": action.target, "wording": action.digest(), "time": stamp,
                                                **action.fields, "status": DECLINED})  # fmt: skip

    def forget_unstored(self, run: TurnRun, action: Action, stored: Callable[[str], bool]) -> None:
        """The record ``action`` matches, begun by an earlier run and never finished, whose thing the store does
        not hold under its key (``stored``): the kill came before the store write, so nothing was made, and the
        record is written failed (it then matches nothing and the call makes it). A thing kept on this machine
        can be looked for; one sent out cannot, and its begun record counts as done."""
        with run.actions.lock:
            earlier, unstored = self._unstored(run, action, stored)
            if earlier is not None and unstored:
                self.workspace.append_jsonl(self.path, {**earlier.record, "status": FAILED, "stored": False})

    def made(self, run: TurnRun, action: Action, stored: Callable[[str], bool]) -> bool:
        """``action`` matches a record whose thing was made (``forget_unstored`` would leave it)."""
        earlier, unstored = self._unstored(run, action, stored)
        return earlier is not None and not unstored

    def _unstored(self, run: TurnRun, action: Action, stored: Callable[[str], bool]) -> tuple[Earlier | None, bool]:
        """The record ``action`` matches, and whether it is begun, never finished, by an earlier run (this run's
        own call may still be at work) and its thing is not in the store."""
        earlier, key = self._match(run, action)
        unstored = earlier is not None and not earlier.finished and key not in run.actions.matched
        return earlier, unstored and not stored(key)

    def _match(self, run: TurnRun, action: Action) -> tuple[Earlier | None, str]:
        where, digest = run.scope, action.digest()
        rows: dict[str, list[JsonObject]] = {}
        for row in self.workspace.read_jsonl(self.path):
            if isinstance(row, dict) and _same_call(row, where, action) and row.get("status") != DECLINED:
                rows.setdefault(str(row.get("key")), []).append(row)
        outgone = {key: found for key, found in rows.items() if not any(r.get("status") == FAILED for r in found)}
        same = [key for key, found in outgone.items() if found[0].get("wording") == digest]
        free = [key for key in outgone if key not in run.actions.matched]
        key = (same or free or [""])[0]
        if not key:
            return None, ""
        found = outgone[key]
        record = {k: v for row in found for k, v in row.items()}  # the latest of each field
        finished = any(r.get("status") == DONE for r in found)
        return Earlier(_when(found[0]), record, finished, bool(same)), key


def _same_call(row: JsonObject, scope: str, action: Action) -> bool:
    """``row`` is a record of the same message, kind of action and target as ``action``."""
    same = row.get("scope") == scope and row.get("kind") == action.kind
    return same and row.get("target") == action.target


@dataclass(frozen=True)
class OnceCall:
    """A skill call as its ledger matches it (``Skill.once_call``): the gate keeps the owner's no to it there,
    under the turn's message, and a replay of the turn after a kill is refused unasked."""

    ledger: ActionLedger
    run: TurnRun
    action: Action

    def declined_before(self) -> str | None:
        """The model's sentence when the owner declined this call for the turn's message before, else None."""
        when = self.ledger.declined(self.run, self.action)
        if when is None:
            return None
        at = done_at(Earlier(when, {}, False, False), datetime.now().astimezone())
        return (
            f"The owner declined this at {at} for this message; it was not done, and they are not asked again. "
            "Tell the user; they can ask for it again in a new message."
        )

    def decline(self) -> None:
        self.ledger.decline(self.run, self.action)


def _when(row: JsonObject) -> datetime:
    try:
        moment = datetime.fromisoformat(str(row.get("time")))
    except ValueError:
        return datetime.now(UTC)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def done_at(earlier: Earlier, now: datetime) -> str:
    """When an earlier action was done, in ``now``'s zone: ``16:49`` today, else ``2026-12-03 16:49``."""
    moment = earlier.time.astimezone(now.tzinfo)
    return f"{moment:%H:%M}" if moment.date() == now.date() else f"{moment:%Y-%m-%d %H:%M}"


def made_once(
    workspace: Workspace,
    path: str,
    context: SkillContext | None,
    action: Action,
    make: Callable[[str], tuple[str, JsonObject]],
    noun: str,
    stored: Callable[[str], bool],
) -> str:
    """A thing the bot will act on later (a reminder, a job) made once for the message the turn answers, in the
    ledger ``path``: the turn run again after a crash makes no second one (it would alert or run twice), whatever
    its words or its time this time ("in 10 minutes" asked again is a later moment), and one whose record a kill
    left begun before its store had it is made (``stored(key)``: the store holds the thing made under the
    record's key). ``make(key)``: the thing stored with ``key``; the sentence and what the record keeps. Without a
    context (a direct call) it is made."""
    if context is None:
        return make("")[0]

    def said(done: Earlier) -> str:
        at = done_at(done, context_now(context))
        if not done.finished:
            return f"not made again: this {noun} was being made at {at} when the bot stopped; list them to see it"
        return f"not made again: this {noun} was made at {at} for this message: {done.record.get('result', '')}"

    ledger, run, key = ActionLedger(workspace, path), turn_run(context), uuid.uuid4().hex
    ledger.forget_unstored(run, action, stored)
    return ledger.once(run, action, lambda: make(key), said, key)


def made_before(
    workspace: Workspace, path: str, context: SkillContext | None, action: Action, stored: Callable[[str], bool]
) -> bool:
    """``made_once`` will only say so: the turn's message made this before (the gate asks the owner nothing); a
    begun record whose thing the store lacks made nothing (asked as ever)."""
    return context is not None and ActionLedger(workspace, path).made(turn_run(context), action, stored)
