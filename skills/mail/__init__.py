"""Built-in skill: send a mail, reply to a fetched one (threaded), or save a draft, through the owner's
SMTP server (``mail`` config).

Exactly once: before a mail goes to the server its call's key (the conversation, recipients, subject,
body and reply target) is recorded in ``mail/sent.jsonl``; the same call again (the turn run again after
a crash right after the send) finds it and sends nothing. The owner's only: a guest turn is refused.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import TypedDict, cast

from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import need
from assistant_framework.workspace import Workspace

from .compose import compose, fetched_mail, recipients
from .smtp import NOT_SET_UP, send

DESCRIPTION = (
    "Send a mail, reply to a fetched mail (reply_to: its Message-ID; threaded), or save a draft. Sending "
    "asks the owner unless they allowed it."
)
CAPABILITIES = ["write", "send"]
#: Offered to the model only when the SMTP server is set up (a draft alone is no reason to cost every prompt).
REQUIRES_CONFIG = "mail.smtp.host"
#: A draft stays in the workspace: only sending asks.
ACTION_CAPABILITIES = {"draft": ["write"], "send": ["send"], "reply": ["send"]}
TIMEOUT_SECONDS = 60
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["send", "reply", "draft"]},
        "to": {"type": "string", "maxLength": 2000},
        "subject": {"type": "string", "maxLength": 300},
        "body": {"type": "string", "maxLength": 100000},
        "reply_to": {"type": "string", "maxLength": 1000},
    },
    "required": ["action"],
    "additionalProperties": False,
}

SENT_LOG = "mail/sent.jsonl"
OWNER_ONLY = "mail is the owner's: it works only in the owner's own chat"


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> str:
    if context is None or not context.private:
        raise ValueError(OWNER_ONLY)
    settings = context.settings.mail
    action = args["action"]
    need(args, action, "body", *(("reply_to",) if action == "reply" else ("to", "subject")))
    original = fetched_mail(workspace, args["reply_to"]) if action == "reply" or args.get("reply_to") else None
    to_value = args.get("to") or (original or {}).get("from")
    to = recipients(to_value, settings.max_recipients)
    if action != "draft" and not (settings.sender and settings.smtp.host):
        raise ValueError(NOT_SET_UP)
    message = compose(settings.sender or "me", to, args.get("subject") or "", args["body"], original)
    key = _call_key(context, action, to, message["Subject"], args["body"], message.get("In-Reply-To"))
    stamp = datetime.now(UTC).strftime("%Y-%m-%d-%H%M%S")
    if action == "draft":
        rel = f"mail/drafts/{stamp}-{key[:8]}.eml"
        workspace.write_text(rel, message.as_string())
        return f"draft saved to {rel} (to {', '.join(to)}, subject {message['Subject']!r}); nothing was sent"
    earlier = _recorded(workspace, key)
    if earlier is not None:
        return (
            f"not sent again: this mail (to {', '.join(to)}, subject {message['Subject']!r}) was sent at "
            f"{earlier.get('time')} ({earlier.get('file')})"
        )
    rel = f"mail/sent/{stamp}-{key[:8]}.eml"
    # Recorded before the send: a crash after it can never send the mail twice (at most once, by design).
    workspace.append_jsonl(
        SENT_LOG,
        {"key": key, "time": stamp, "to": to, "subject": str(message["Subject"]), "file": rel,
         "message_id": str(message["Message-ID"])},
    )  # fmt: skip
    try:
        send(settings.smtp, message)
    except ValueError:
        # The server refused it or could not be reached: nothing went out, the same call may try again.
        workspace.append_jsonl(SENT_LOG, {"key": key, "time": stamp, "status": "failed"})
        raise
    workspace.write_text(rel, message.as_string())
    threaded = f", in reply to {message['In-Reply-To']}" if original is not None else ""
    return f"sent to {', '.join(to)}: {message['Subject']!r}{threaded}; saved to {rel}"


def _call_key(context: SkillContext, action: str, to: list[str], subject: str, body: str, parent: object) -> str:
    """What makes two calls the same mail: the conversation, the recipients, subject, body and parent."""
    fields = [context.conversation_id, action, sorted(to), subject, body, str(parent or "")]
    return hashlib.sha256(json.dumps(fields, ensure_ascii=False).encode("utf-8")).hexdigest()


class SentRecord(TypedDict, total=False):
    """A line of ``SENT_LOG``: a mail about to be sent (its call's key, the file it is saved to), or that its send
    failed (``"status": "failed"``, the same key)."""

    key: str
    time: str
    to: list[str]
    subject: str
    file: str
    message_id: str
    status: str


def _recorded(workspace: Workspace, key: str) -> SentRecord | None:
    """The last record of this call unless it says the send failed: the mail went out, or may have."""
    last = None
    for record in workspace.read_jsonl(SENT_LOG):
        if isinstance(record, dict) and record.get("key") == key:
            last = cast(SentRecord, record)
    return None if last is None or last.get("status") == "failed" else last
