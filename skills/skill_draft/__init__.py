"""skill_draft: the model writes a new SKILL.md skill (instructions only) for the owner to approve."""

from __future__ import annotations

from assistant_framework.agentskills.drafts import DraftError, write_draft
from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.workspace import Workspace

DESCRIPTION = "When the owner asks for a new skill: draft it (name like weekly-report, description, instructions)."
CAPABILITIES = ["write"]
ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "instructions": {"type": "string"},
    },
    "required": ["name", "description", "instructions"],
    "additionalProperties": False,
}


def run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> str:
    name = str(args["name"]).strip()
    try:
        rel = write_draft(workspace, name, str(args["description"]), str(args["instructions"]))
    except DraftError as exc:
        raise ValueError(str(exc)) from None
    return (
        f"Draft saved as {rel}. It is not used until the owner approves it: /drafts approve {name} "
        f"(or /drafts discard {name}). Tell the owner."
    )
