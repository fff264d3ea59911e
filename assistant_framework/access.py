"""Who sees the owner's data: one rule for every frontend (Telegram, Signal, terminal, web).

A frontend knows the sender and the kind of chat; it reports ``is_owner`` and ``one_to_one``.
Only the owner's own one-to-one chat sees the owner's data (notes, tasks, facts, contacts,
collectors, the profile, learnings, other chats' logs). Everyone else allowed to talk to the bot,
and every group chat, is a *guest* turn: their own chat's history and memory, the skills listed in
``policy.guest_skills`` running on a workspace rooted at the chat's own area
(``guests/<conversation>/``), and no owner-only command.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from assistant_framework.config.settings import PolicySettings, RuntimeSettings
from assistant_framework.workspace import Workspace
from assistant_framework.workspace.private import make_private_dirs

GUEST_ROOT = "guests"
#: Commands that show or change the owner's data or the bot itself.
OWNER_ONLY_COMMANDS = frozenset({"now", "jobs", "reload", "stats", "model", "pair", "drafts"})


def sees_owner_data(is_owner: bool, one_to_one: bool) -> bool:
    """True only in the owner's own one-to-one chat (a group shows replies to other people)."""
    return bool(is_owner and one_to_one)


def command_allowed(command: str, owner_data: bool) -> bool:
    """Whether ``/command`` may run in a turn with (or without) the owner's data."""
    return owner_data or command.lower() not in OWNER_ONLY_COMMANDS


def guest_skills(policy: PolicySettings) -> frozenset[str]:
    """The skill names a guest turn may see and call (``policy.guest_skills``). They run on the chat's own
    area, so even ``file`` cannot reach the owner's files."""
    return frozenset(policy.guest_skills)


def guest_area(conversation_id: str) -> str:
    """The workspace folder of one guest chat: readable name plus a short hash (ids may hold any character)."""
    readable = re.sub(r"[^A-Za-z0-9_-]+", "_", str(conversation_id)).strip("_")[:40] or "chat"
    digest = hashlib.sha256(str(conversation_id).encode("utf-8")).hexdigest()[:8]
    return f"{GUEST_ROOT}/{readable}-{digest}"


def guest_workspace(workspace: Workspace, conversation_id: str) -> Workspace:
    """A Workspace confined to the chat's own area (created empty, without the owner's layout)."""
    root: Path = workspace.path(guest_area(conversation_id))
    make_private_dirs(root)
    return Workspace(root, create=False)


#: Workspace files that feed every later system prompt (owner context, learnings, the profile).
PROMPT_FILES = ("context/", "learnings/", "profile.md")


#: Folders whose files schedule work that runs later in the owner's name: a write there is a jobs or reminders
#: change, whichever skill makes it (``file`` writing ``jobs/jobs.json`` adds jobs as the ``jobs`` skill does).
SCHEDULE_FOLDERS = ("jobs/", "reminders/")


def schedules_work(rel: str) -> bool:
    """True when a workspace-relative path is in a folder of scheduled work (``SCHEDULE_FOLDERS``)."""
    rel = str(rel).replace("\\", "/")
    while rel.startswith(("./", "/")):
        rel = rel[1:] if rel.startswith("/") else rel[2:]
    return any(rel == folder.rstrip("/") or rel.startswith(folder) for folder in SCHEDULE_FOLDERS)


def feeds_prompt(rel: str) -> bool:
    """True when a workspace-relative path is read into the system prompt."""
    rel = str(rel).replace("\\", "/").lstrip("./")
    return any(rel == p or rel.startswith(p) for p in PROMPT_FILES)


def plugin_dir_problems(runtime: RuntimeSettings, workspace_root: Path) -> list[str]:
    """``runtime.skills_dirs`` / ``collectors_dirs`` entries the model could write code into: inside the
    workspace, or the folder that holds it (the workspace itself would be a plugin folder)."""
    root = Path(workspace_root).expanduser().resolve()
    problems = []
    for key, entries in (("skills_dirs", runtime.skills_dirs), ("collectors_dirs", runtime.collectors_dirs)):
        for index, entry in enumerate(entries):
            folder = Path(str(entry)).expanduser().resolve()
            if folder == root or root in folder.parents or folder == root.parent:
                problems.append(
                    f"runtime.{key}[{index}]: {entry!r} is inside the workspace {str(root)!r} (or holds it), "
                    "where the assistant writes files; plugin code must live outside it"
                )
    return problems
