"""The ``SKILL.md`` skills the assistant knows: found in the skills dirs and the workspace's
``.agents/skills/``, rescanned when one of their folders changed (an install or an approved draft is
loaded at the next turn, without a restart).

What the model reads of a skill is bounded: its body (``DOC_CHARS``) and each referenced file, which must
be a text file inside the skill's folder (no ``..``, no link out of it).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from assistant_framework.agentskills.format import SKILL_FILE, AgentSkill, AgentSkillError, read_skill_folder

#: The workspace's folder of installed and approved skills (the spec's discovery folder).
WORKSPACE_SKILLS = ".agents/skills"
#: Characters of a body or a referenced file the model gets in one ``skill_doc`` result.
DOC_CHARS = 20_000
#: A referenced file over this is refused unread.
MAX_REFERENCED_BYTES = 1024 * 1024
#: Folders read per skills dir: more is a wrong folder, not a skill collection.
MAX_SKILLS_PER_DIR = 500


@dataclass(frozen=True)
class AgentSkillProblem:
    """A folder with a ``SKILL.md`` that did not load, and why (one line in ``skills list`` and ``doctor``)."""

    name: str
    folder: Path
    error: str


Stamp = tuple[tuple[str, int, int], ...]


def _cut(text: str, limit: int, what: str) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n[... {what} cut: {len(text) - limit} more characters]"


class AgentSkillLibrary:
    """The ``SKILL.md`` folders of ``dirs`` (a later dir replaces a name found in an earlier one)."""

    def __init__(self, dirs: Sequence[Path]) -> None:
        self.dirs = [Path(d) for d in dirs]
        self._lock = threading.Lock()
        self._stamp: Stamp | None = None
        self._taken: frozenset[str] = frozenset()
        self.skills: dict[str, AgentSkill] = {}
        self.errors: list[AgentSkillProblem] = []

    def _folders(self, directory: Path) -> list[Path]:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return []
        found = []
        for entry in entries[: MAX_SKILLS_PER_DIR * 4]:
            if entry.name.startswith((".", "_")) or not entry.is_dir():
                continue
            if os.path.isfile(os.path.join(entry.path, SKILL_FILE)):
                found.append(Path(entry.path))
        return found[:MAX_SKILLS_PER_DIR]

    def stamp(self) -> Stamp:
        """Each ``SKILL.md`` with its modification time and size: equal while nothing changed."""
        marks: list[tuple[str, int, int]] = []
        for directory in self.dirs:
            for folder in self._folders(directory):
                try:
                    stat = (folder / SKILL_FILE).stat()
                except OSError:
                    continue
                marks.append((str(folder), stat.st_mtime_ns, stat.st_size))
        return tuple(marks)

    def refresh(self, taken: Collection[str] = ()) -> bool:
        """Read the folders again when a ``SKILL.md`` was added, changed or removed; True when it did.

        ``taken``: names of other skills (the plugins'): a ``SKILL.md`` of such a name would share their
        ``policy.skills`` rule, so it does not load."""
        stamp = self.stamp()
        taken = frozenset(taken)
        with self._lock:
            if stamp == self._stamp and taken == self._taken:
                return False
            skills: dict[str, AgentSkill] = {}
            errors: list[AgentSkillProblem] = []
            for directory in self.dirs:
                for folder in self._folders(directory):
                    try:
                        skill = read_skill_folder(folder)
                    except AgentSkillError as exc:
                        errors.append(AgentSkillProblem(folder.name, folder, str(exc)))
                        continue
                    if skill.name in taken:
                        errors.append(
                            AgentSkillProblem(
                                skill.name,
                                folder,
                                f"{folder / SKILL_FILE}: the name {skill.name!r} is already a skill's (a plugin or "
                                "a tool); rename the folder and its 'name'",
                            )
                        )
                        continue
                    skills[skill.name] = skill
            self.skills = dict(sorted(skills.items()))
            self.errors = errors
            self._stamp = stamp
            self._taken = taken
            return True

    def get(self, name: str) -> AgentSkill | None:
        return self.skills.get(name)

    def doc(self, name: str, file: str | None = None) -> str:
        """The skill's instructions, or one file it references, cut to ``DOC_CHARS``; raises ValueError
        with a sentence the model can act on."""
        skill = self.skills.get(name)
        if skill is None:
            known = ", ".join(self.skills) or "(none)"
            raise ValueError(f"there is no SKILL.md skill named {name!r}; the skills are: {known}")
        if not file:
            return _cut(skill.body, DOC_CHARS, "instructions")
        path = referenced_path(skill, file)
        try:
            if path.stat().st_size > MAX_REFERENCED_BYTES:
                raise ValueError(f"{file} is larger than {MAX_REFERENCED_BYTES} bytes; it is not read")
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{file} is not a text file") from None
        except OSError as exc:
            raise ValueError(f"{file} cannot be read: {exc.strerror or exc}") from None
        return _cut(text, DOC_CHARS, file)


def inside(folder: Path, rel: str) -> Path:
    """``rel`` (a relative POSIX path) resolved inside ``folder``; ValueError when it leaves it."""
    parts = PurePosixPath(rel.replace("\\", "/")).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts or "\x00" in rel:
        raise ValueError(f"{rel!r} is not a path inside the skill's folder")
    path = (folder / Path(*parts)).resolve()
    root = folder.resolve()
    if path != root and root not in path.parents:
        raise ValueError(f"{rel!r} leads out of the skill's folder")
    return path


def referenced_path(skill: AgentSkill, rel: str) -> Path:
    """A file of the skill's folder the body may reference (not ``SKILL.md`` itself: that is the body)."""
    path = inside(skill.folder, rel)
    if not path.is_file():
        files = sorted(
            p.relative_to(skill.folder).as_posix()
            for p in skill.folder.rglob("*")
            if p.is_file() and p.name != SKILL_FILE and not p.name.startswith(".")
        )[:30]
        raise ValueError(f"{skill.name} has no file {rel!r}; its files: {', '.join(files) or '(none)'}")
    return path
