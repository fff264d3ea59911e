"""Built-in skill: send a mail, reply to a fetched one (threaded), or save a draft, through the owner's
SMTP server (``mail`` config).

Exactly once: before a mail goes to the server it is recorded in ``mail/sent.jsonl`` under the message the turn
answers and its recipients (assistant_framework/skills/once.py); the turn run again after a crash right after the
send finds it and sends nothing, however the model words the mail this time. The owner's only: a guest turn is
refused.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import parseaddr

from assistant_framework.json_types import JsonObject
from assistant_framework.skills.once import Action, ActionLedger, Earlier, OnceCall, done_at, turn_run
from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.skills.support import context_now, need
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
    message, to = _message(workspace, args, context)
    if action != "draft" and not (settings.sender and settings.smtp.host):
        raise ValueError(NOT_SET_UP)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d-%H%M%S")
    name = f"{stamp}-{_action(message, to, args['body']).digest()[:8]}.eml"
    if action == "draft":
        rel = f"mail/drafts/{name}"
        workspace.write_text(rel, message.as_string())
        return f"draft saved to {rel} (to {', '.join(to)}, subject {message['Subject']!r}); nothing was sent"
    rel = f"mail/sent/{name}"

    def send_it() -> tuple[str, JsonObject]:
        send(settings.smtp, message)  # a ValueError (refused, unreachable): recorded failed, may be tried again
        workspace.write_text(rel, message.as_string())
        threaded = f", in reply to {message['In-Reply-To']}" if message["In-Reply-To"] else ""
        return f"sent to {', '.join(to)}: {message['Subject']!r}{threaded}; saved to {rel}", {}

    fields: JsonObject = {"to": to, "subject": str(message["Subject"]), "file": rel,
                          "message_id": str(message["Message-ID"])}  # fmt: skip
    once = _action(message, to, args["body"], fields)
    return ActionLedger(workspace, SENT_LOG).once(
        turn_run(context), once, send_it, lambda done: _not_again(done, context)
    )


def done_before(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> bool:
    """This send was made before for the turn's message (a replay after a crash): nothing will go out, so the
    owner is not asked about it (skills/once.py)."""
    call = once_call(workspace, args, context)
    return call is not None and call.ledger.earlier(call.run, call.action) is not None


def once_call(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> OnceCall | None:
    """A send or reply as the ledger matches it (the gate keeps the owner's no there); None: nothing goes out."""
    if context is None or not context.private or args.get("action") == "draft":
        return None
    try:
        message, to = _message(workspace, args, context)
    except ValueError:
        return None  # a call the run refuses in one sentence
    return OnceCall(ActionLedger(workspace, SENT_LOG), turn_run(context), _action(message, to, args["body"]))


def goes_to(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> str | None:
    """The recipients of a send or reply, as ``run`` resolves them (a reply's: the original's sender), for the
    owner's question; None for a draft or a call ``run`` refuses."""
    if context is None or args.get("action") == "draft":
        return None
    try:
        return ", ".join(_message(workspace, args, context)[1])
    except ValueError:
        return None


def _message(workspace: Workspace, args: SkillArgs, context: SkillContext) -> tuple[EmailMessage, list[str]]:
    """The mail the call writes and its recipients; ValueError in one sentence for a call that cannot be one."""
    action = args["action"]
    need(args, action, "body", *(("reply_to",) if action == "reply" else ("to", "subject")))
    original = fetched_mail(workspace, args["reply_to"]) if action == "reply" or args.get("reply_to") else None
    to = recipients(args.get("to") or (original or {}).get("from"), context.settings.mail.max_recipients)
    sender = context.settings.mail.sender or "me"
    return compose(sender, to, args.get("subject") or "", args["body"], original), to


def _action(message: EmailMessage, to: list[str], body: str, fields: JsonObject | None = None) -> Action:
    """A mail out as the ledger matches it: to these addresses (a send or a reply alike), in these words."""
    addresses = sorted({parseaddr(one)[1].lower() for one in to})
    parent = str(message["In-Reply-To"] or "")
    return Action("send", ",".join(addresses), [str(message["Subject"]), body, parent], fields or {})


def _not_again(done: Earlier, context: SkillContext) -> str:
    """What a call that matched an earlier mail of this message reads instead of a send."""
    record = done.record
    to = ", ".join(str(one) for one in record.get("to") or [])
    at = done_at(done, context_now(context))
    what = f"the mail to {to}, subject {str(record.get('subject'))!r} ({record.get('file')})"
    sent = "was sent" if done.finished else "was being sent when the bot stopped (so it may have gone out)"
    said = f"not sent again: {what} {sent} at {at} for this message"
    return said if done.same_wording else said + "; it went as first written, not in this call's words"
