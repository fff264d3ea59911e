"""Skills the assistant drafts for the owner: a ``SKILL.md`` (instructions only, no scripts) written into
the workspace's ``skills-drafts/<name>/``, never loaded there. The owner reads it and approves it (it
moves to ``.agents/skills/<name>/`` and is offered from the next turn, without a restart) or discards it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import yaml

from assistant_framework.agentskills.format import (
    MAX_DESCRIPTION,
    SKILL_FILE,
    AgentSkill,
    AgentSkillError,
    check_name,
    parse_skill_file,
    read_skill_folder,
)
from assistant_framework.agentskills.library import WORKSPACE_SKILLS
from assistant_framework.workspace import Workspace

DRAFTS = "skills-drafts"
#: Characters of a draft's instructions (the spec asks for bodies under ~5,000 tokens).
MAX_INSTRUCTIONS = 20_000
#: Drafts waiting at once: more is a model writing in a loop.
MAX_DRAFTS = 20


class DraftError(ValueError):
    """A draft that cannot be written, approved or discarded; one sentence."""


def skill_text(name: str, description: str, instructions: str) -> str:
    """The ``SKILL.md`` of a draft: front matter with its name and description, then the instructions."""
    front = yaml.safe_dump({"name": name, "description": " ".join(description.split())}, sort_keys=False)
    return f"---\n{front}---\n\n{instructions.strip()}\n"


def drafts(workspace: Workspace) -> list[str]:
    """The names of the drafts waiting for the owner."""
    root = workspace.root / DRAFTS
    if not root.is_dir():
        return []
    return sorted(p.parent.name for p in root.glob(f"*/{SKILL_FILE}"))


def _draft_folder(workspace: Workspace, name: str) -> Path:
    try:
        check_name(name, name, Path(DRAFTS))
    except AgentSkillError:
        raise DraftError(
            f"{name[:80]!r} is no skill name: 1-64 lowercase letters, digits and single hyphens (weekly-report)"
        ) from None
    return workspace.root / DRAFTS / name


def write_draft(workspace: Workspace, name: str, description: str, instructions: str) -> str:
    """Write (or rewrite) the draft ``name``; its path relative to the workspace."""
    folder = _draft_folder(workspace, name)
    if not instructions.strip():
        raise DraftError("the instructions are empty: write what to do, step by step")
    if len(instructions) > MAX_INSTRUCTIONS:
        raise DraftError(f"the instructions have {len(instructions)} characters; at most {MAX_INSTRUCTIONS}")
    if not description.strip() or len(description) > MAX_DESCRIPTION:
        raise DraftError(f"the description must be 1-{MAX_DESCRIPTION} characters: what it does and when to use it")
    if not folder.exists() and len(drafts(workspace)) >= MAX_DRAFTS:
        raise DraftError(f"{MAX_DRAFTS} drafts are already waiting; the owner approves or discards them first")
    text = skill_text(name, description, instructions)
    parse_skill_file(text, folder)  # the same checks a skill gets when it loads
    rel = f"{DRAFTS}/{name}/{SKILL_FILE}"
    workspace.write_text(rel, text)
    return rel


def read_draft(workspace: Workspace, name: str) -> AgentSkill:
    folder = _draft_folder(workspace, name)
    if not (folder / SKILL_FILE).is_file():
        raise DraftError(f"there is no draft {name!r}; drafts: {', '.join(drafts(workspace)) or '(none)'}")
    try:
        return read_skill_folder(folder)
    except AgentSkillError as exc:
        raise DraftError(f"the draft {name!r} does not load: {exc}") from None


def approve(workspace: Workspace, name: str) -> Path:
    """Move the draft to ``.agents/skills/<name>/``: offered from the next turn. Scripts never come with it."""
    skill = read_draft(workspace, name)
    target = workspace.root / WORKSPACE_SKILLS / name
    if target.exists():
        raise DraftError(f"a skill {name!r} is already installed; remove it first or discard the draft")
    extra = [p.name for p in skill.folder.iterdir() if p.name != SKILL_FILE]
    if extra:
        raise DraftError(
            f"the draft {name!r} holds more than its SKILL.md ({', '.join(extra)}): drafts are instructions only"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(skill.folder, target)
    return target


def discard(workspace: Workspace, name: str) -> None:
    folder = _draft_folder(workspace, name)
    if not folder.is_dir():
        raise DraftError(f"there is no draft {name!r}; drafts: {', '.join(drafts(workspace)) or '(none)'}")
    shutil.rmtree(folder)
