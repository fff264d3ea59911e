"""The calendar skill's changes, each made at most once for the message a turn answers: ``calendar/changes.jsonl``.

A create, move or delete is recorded before it goes to the server (assistant_framework/skills/once.py), under the
message the turn answers, the action and its event (a move's or delete's uid; a create has none: the turn's nth
create is its nth). The turn run again after a crash right after the change, the model wording it as it pleases this
time (another title), finds the record and changes nothing, saying when it was done. A change the server refused
(or that could not reach it) is recorded as failed and may be tried again.
"""

from __future__ import annotations

from collections.abc import Callable

from assistant_framework.skills.once import Action, ActionLedger, Earlier, OnceCall, done_at, turn_run
from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import context_now
from assistant_framework.workspace import Workspace

CHANGES = "calendar/changes.jsonl"
#: What a change is, as the ledger matches it: the rest of its arguments may be worded otherwise on a replay.
WORDING = ("title", "start", "minutes")


def change_of(args: SkillArgs) -> Action:
    """The change a call asks for: its action on its event (the uid; "" for a create), in these words."""
    target = "" if args["action"] == "create" else str(args.get("uid") or "")
    wording = {k: args[k] for k in WORDING if k in args}
    return Action(str(args["action"]), target, wording, {"uid": args.get("uid"), "title": args.get("title")})


def once(workspace: Workspace, context: SkillContext, args: SkillArgs, change: Callable[[], str]) -> str:
    """``change()`` (the server call, its sentence back) unless this change was made before for the turn's
    message: then what it said."""

    def act() -> tuple[str, dict[str, object]]:
        return change(), {}

    def said(done: Earlier) -> str:
        at = done_at(done, context_now(context))
        made = "was made" if done.finished else "was being made when the bot stopped, so it may have been made,"
        result = f": {done.record['result']}" if done.record.get("result") else ""
        words = "" if done.same_wording else " (as first asked, not in this call's words)"
        return f"not done again: this {args['action']} {made} at {at} for this message{result}{words}"

    return ActionLedger(workspace, CHANGES).once(turn_run(context), change_of(args), act, said)


def done_before(workspace: Workspace, context: SkillContext, args: SkillArgs) -> bool:
    """This change was made (or begun) before for the turn's message: nothing will reach the server."""
    return ActionLedger(workspace, CHANGES).earlier(turn_run(context), change_of(args)) is not None


def once_call(workspace: Workspace, context: SkillContext, args: SkillArgs) -> OnceCall:
    """This change as the ledger matches it (the gate keeps the owner's no there)."""
    return OnceCall(ActionLedger(workspace, CHANGES), turn_run(context), change_of(args))
