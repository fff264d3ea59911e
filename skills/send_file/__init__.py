"""Built-in skill: send a workspace file or picture to the chat the turn answers (docs/actions.md, "Files out").

The channel sends it (Telegram ``sendDocument``/``sendPhoto``, a Signal attachment, the terminal prints the
path) through the ``send_file`` service the channel gives the turn (``assistant_framework/media/files_out.py``:
confined to the turn's workspace, never ``state/``, bounded by the channel's ``max_file_bytes``, recorded in
``state/files_out.jsonl`` before it goes so a turn run again after a crash does not send it twice, whatever
its caption this time).
Capability ``send``: by default it runs unasked in a trusted turn (``policy.skills.send_file``) and asks the
owner in a turn with outside content.
"""

from __future__ import annotations

from assistant_framework.skills.once import OnceCall
from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.workspace import Workspace

DESCRIPTION = (
    "Send a workspace file or picture (an export, a report, a chart you wrote) to this chat, with a caption. "
    "Only files in the workspace."
)
CAPABILITIES = ["send"]
# Offered only in a turn whose chat can receive a file: a job's or hook's run, a served client get no send_file.
REQUIRES_SERVICE = "send_file"
TIMEOUT_SECONDS = 150  # a 50 MB upload on a slow line
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "maxLength": 1000},
        "caption": {"type": "string", "maxLength": 1000},
    },
    "required": ["path"],
    "additionalProperties": False,
}
NO_CHANNEL = "this chat cannot receive files from a skill (no channel to send through)"


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> str:
    sender = context.services.get("send_file") if context is not None else None
    if sender is None:
        raise ValueError(NO_CHANNEL)
    return sender(workspace, args["path"], args.get("caption") or "")


def done_before(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> bool:
    """The file went for the turn's message before (a replay after a crash): nothing will go, nobody is asked."""
    sender = context.services.get("send_file") if context is not None else None
    return sender is not None and sender.done_before(workspace, args["path"], args.get("caption") or "")


def once_call(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> OnceCall | None:
    """The send as the ledger matches it: the gate keeps the owner's no there (a replay after a kill is not asked)."""
    sender = context.services.get("send_file") if context is not None else None
    return None if sender is None else sender.once_call(workspace, args["path"], args.get("caption") or "")
