"""The calendar skill's changes, each made at most once: ``calendar/changes.jsonl``.

A create, move or delete is recorded before it goes to the server, under a key of the chat, the message the turn
answers (the same when a restart answers it again) and the call's arguments. The turn run again after a crash
right after the change asks for the same call; it finds the record and changes nothing, saying when it was done.
A change the server refused (or that could not reach it) is recorded as failed and may be tried again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime

from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.workspace import Workspace

CHANGES = "calendar/changes.jsonl"


def call_key(context: SkillContext, args: SkillArgs) -> str:
    """What makes two calls the same change: the chat, the message answered, the action and its arguments."""
    fields = [
        context.conversation_id,
        str(context.message_id or ""),
        {k: args[k] for k in sorted(args) if k in ("action", "title", "start", "minutes", "uid")},
    ]
    return hashlib.sha256(json.dumps(fields, ensure_ascii=False, default=str).encode("utf-8")).hexdigest()[:32]


def once(workspace: Workspace, context: SkillContext, args: SkillArgs, change: Callable[[], str]) -> str:
    """``change()`` (the server call, its sentence back) unless this call was made before: then what it said."""
    key = call_key(context, args)
    last = None
    for record in workspace.read_jsonl(CHANGES):
        if isinstance(record, dict) and record.get("key") == key:
            last = record
    if last is not None and last.get("status") != "failed":
        done = f": {last['result']}" if last.get("result") else ""
        return f"not done again: this {args['action']} was made at {last.get('time')}{done}"
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    record = {"key": key, "time": stamp, "action": args["action"], "uid": args.get("uid"), "title": args.get("title")}
    # Recorded before the server call: a crash after it can never make the change twice (at most once).
    workspace.append_jsonl(CHANGES, {**record, "status": "begun"})
    try:
        said = change()
    except Exception:
        workspace.append_jsonl(CHANGES, {**record, "status": "failed"})
        raise
    workspace.append_jsonl(CHANGES, {**record, "status": "done", "result": said})
    return said
