"""``/drafts`` in the owner's chat: the skills the assistant drafted (``skills-drafts/``), shown, approved
(offered from the next message, without a restart) or discarded. The same on every channel."""

from __future__ import annotations

from assistant_framework.agentskills.drafts import DraftError, approve, discard, drafts, read_draft
from assistant_framework.workspace import Workspace

#: Characters of a draft shown in chat (the whole file is in skills-drafts/ and on the web page).
SHOWN_CHARS = 3_500
USAGE = "Use /drafts, /drafts show NAME, /drafts approve NAME or /drafts discard NAME."


def drafts_command(workspace: Workspace, rest: str) -> str:
    """The answer to ``/drafts [show|approve|discard NAME]``."""
    words = rest.split()
    if not words:
        waiting = drafts(workspace)
        if not waiting:
            return "No drafted skills are waiting. Ask me to make a skill for a task, and I'll draft one."
        return (
            "Drafted skills waiting for you (not used until approved):\n"
            + "\n".join(f"- {name}" for name in waiting)
            + f"\n{USAGE}"
        )
    if len(words) != 2 or words[0].lower() not in ("show", "approve", "discard"):
        return USAGE
    action, name = words[0].lower(), words[1]
    try:
        if action == "show":
            skill = read_draft(workspace, name)
            body = skill.body if len(skill.body) <= SHOWN_CHARS else skill.body[:SHOWN_CHARS] + "\n[... cut]"
            return f"Draft {name}: {skill.description}\n\n{body}\n\n/drafts approve {name} or /drafts discard {name}"
        if action == "approve":
            approve(workspace, name)
            return f"Approved: {name} is one of my skills from your next message."
        discard(workspace, name)
        return f"Discarded the draft {name}."
    except DraftError as exc:
        return f"Not done: {exc}"
