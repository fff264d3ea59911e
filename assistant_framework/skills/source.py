"""The seam for skills that are not plugin folders: a ``SkillSource`` hands the manager finished
``Skill`` records (an MCP server's tools) and is closed with it.

The manager treats what a source gives like a folder's skill: the same name checks, one validator,
prepared once, gated, audited and run by ``run_prepared``. Nothing on the call path knows where a
skill came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from assistant_framework.skills.loader import Skill


@dataclass
class SkillLoadError:
    """A skill (a plugin folder, or what a source could not offer) that failed to load; the others load."""

    name: str
    folder: Path | None
    error: str


@dataclass
class SourceLoad:
    """What one source offers: its skills, and what it could not offer with why."""

    skills: list[Skill] = field(default_factory=list)
    errors: list[SkillLoadError] = field(default_factory=list)


class SkillSource(Protocol):
    """Skills from somewhere other than a plugin folder."""

    def load(self) -> SourceLoad:
        """Make the skills ready (may take a while: a server starts) and return them; never raises."""
        ...

    def close(self) -> None:
        """Release what ``load`` started (servers, threads); the skills stop working."""
        ...
