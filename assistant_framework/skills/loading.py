"""Loading the skill set: the skill folders of each skills dir and the skills of each source (MCP servers),
with the rules that keep two skills a model could confuse from loading side by side.

A folder or source that cannot load costs only itself: its problem is kept as a ``SkillLoadError`` and the
load goes on. The ``SkillManager`` (manager.py) runs what was loaded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from assistant_framework.agentskills.library import WORKSPACE_SKILLS
from assistant_framework.plugin_import import forget_module
from assistant_framework.skills.loader import Skill, SkillDefinitionError, is_skill_folder, load_skill_folder, tool_name
from assistant_framework.skills.prepare import validator_for
from assistant_framework.skills.source import SkillLoadError, SkillSource
from assistant_framework.workspace import Workspace

if TYPE_CHECKING:
    from jsonschema.protocols import Validator


@dataclass
class Loading:
    """What a load has found so far: the skills, their argument validators, the modules imported, the errors."""

    skills: dict[str, Skill] = field(default_factory=dict)
    errors: list[SkillLoadError] = field(default_factory=list)
    validators: dict[str, Validator] = field(default_factory=dict)
    module_names: list[str] = field(default_factory=list)

    def add(self, spec: Skill) -> None:
        self.skills[spec.name] = spec
        self.validators[spec.name] = validator_for(spec.args_schema)


def load_directory(directory: Path, found: Loading, *, reuse: bool = False) -> None:
    """The skill folders of one of ``runtime.skills_dirs``: a later directory replaces a name, within one a
    name used twice is a mistake. ``reuse``: the framework's own folder, whose unchanged skills are not imported
    again (``load_skill_folder``)."""
    if not directory.is_dir():
        found.errors.append(
            SkillLoadError(directory.name, directory, f"{directory}: no such folder (listed in runtime.skills_dirs)")
        )
        return
    here: dict[str, Path | None] = {}
    for folder in sorted(directory.iterdir()):
        if not is_skill_folder(folder):
            continue
        try:
            spec = load_skill_folder(folder, reuse=reuse)
        except SkillDefinitionError as exc:
            found.errors.append(SkillLoadError(name=folder.name, folder=folder.resolve(), error=str(exc)))
            continue
        except Exception as exc:  # a bug we did not foresee must not stop the other skills
            found.errors.append(SkillLoadError(folder.name, folder.resolve(), f"{folder}: {type(exc).__name__}: {exc}"))
            continue
        clash = _name_clash(spec, here, found.skills)
        if clash is not None:
            forget_module(spec.module_name)
            found.errors.append(SkillLoadError(folder.name, spec.folder, clash))
            continue
        here[spec.name] = spec.folder
        found.module_names.append(spec.module_name)
        found.add(spec)


def _name_clash(spec: Skill, here: dict[str, Path | None], skills: dict[str, Skill]) -> str | None:
    """Why a folder's skill cannot load beside the others (its name taken in the same directory, or its tool
    name taken), or None."""
    if spec.name in here:
        return (
            f"{spec.folder}: skill name {spec.name!r} is already used by {here[spec.name]}; "
            "rename one (NAME or the folder); to replace a skill, put yours in a folder "
            "listed in runtime.skills_dirs"
        )
    twin = _twin(skills, spec)
    if twin is not None:
        # Native tool calls name the tool, not the skill: both would be offered under one name.
        return (
            f"{spec.folder}: skill name {spec.name!r} is offered to the model as the tool "
            f"{tool_name(spec.name)!r}, like skill {twin.name!r} ({twin.where}); a tool call could "
            "not tell them apart: rename one (NAME or the folder)"
        )
    return None


def load_source(source: SkillSource, found: Loading) -> None:
    """A skill source's skills (MCP servers and the like)."""
    try:
        loaded = source.load()
    except Exception as exc:  # a source's bug must not stop the other skills
        found.errors.append(SkillLoadError(type(source).__name__, None, f"{type(exc).__name__}: {exc}"))
        return
    found.errors += loaded.errors
    for spec in loaded.skills:
        # A source's skill never replaces a loaded one, nor sits beside one a model could take it for
        # (``Web``, ``web-search``, ``websearch`` beside ``web`` and ``web_search``).
        clash = _lookalike(found.skills, spec)
        if clash is not None:
            found.errors.append(
                SkillLoadError(
                    spec.name,
                    None,
                    f"{spec.where}: skill name {spec.name!r} is already used by skill {clash.name!r} "
                    f"({clash.where}), or differs from it only in case or separators; a call could not "
                    "tell them apart: rename one",
                )
            )
            continue
        found.add(spec)


def _twin(skills: dict[str, Skill], spec: Skill) -> Skill | None:
    """Another loaded skill that is offered to the model under ``spec``'s native tool name."""
    return next((s for s in skills.values() if s.name != spec.name and tool_name(s.name) == tool_name(spec.name)), None)


def _folded(name: str) -> str:
    """A name as a model might misremember it: lower case, without separators (``Web-Search`` -> ``websearch``)."""
    return re.sub(r"[^0-9a-z]", "", name.lower())


def _lookalike(skills: dict[str, Skill], spec: Skill) -> Skill | None:
    """A loaded skill of ``spec``'s name, or one that differs from it only in case or separators (the native
    tool names of the two included)."""
    key = _folded(spec.name)
    return next((s for s in skills.values() if _folded(s.name) == key), None)


def agent_skill_dirs(skills_dirs: Sequence[str | Path], workspace: Workspace) -> list[Path]:
    """Where ``SKILL.md`` skills are found: the configured skills dirs, then the workspace's ``.agents/skills/``
    (installed and approved skills; a later folder replaces a name)."""
    return [*(Path(d).expanduser() for d in skills_dirs), workspace.root / WORKSPACE_SKILLS]
