"""The doctor's plugin checks: skills and collectors load, and no enabled collector keeps failing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from assistant_framework.agentskills.library import AgentSkillLibrary
from assistant_framework.hints import CLI
from assistant_framework.workspace import WORKSPACE_MARKER, Workspace
from messaging_llm_bot.ops.channels.doctor import FAIL, OK, WARN, Check, Context


def check_plugins(ctx: Context) -> list[Check]:
    from assistant_framework.collectors import CollectorManager
    from assistant_framework.skills import SkillManager

    config = ctx.config or {}
    workspace = Workspace(ctx.workspace_path, create=False)
    # Loading runs no skill; the workspace is read for its .agents/skills/ only.
    skills = SkillManager.from_config(config, workspace)
    collectors = CollectorManager.from_settings(ctx.settings.runtime, config.get("collectors"), workspace)
    broken = {problem.folder for problem in skills.library.errors}
    checks = [
        _loaded("skills", [e for e in skills.errors if e.folder not in broken], f"{len(skills.names())} loaded"),
        *_agent_skills(skills.library),
        _loaded(
            "collectors", collectors.errors, f"{len(collectors.collectors)} found, {len(collectors.enabled())} enabled"
        ),
    ]
    if (ctx.workspace_path / WORKSPACE_MARKER).is_dir():
        for row in collectors.status():
            if row.get("enabled") and row.get("consecutive_failures"):
                checks.append(
                    Check(
                        f"collector {row['name']}",
                        WARN,
                        f"{row['consecutive_failures']} failed run(s) in a row: {str(row.get('error') or '')[:200]}",
                        f"`{CLI} collectors run {row['name']}` shows the whole error",
                    )
                )
    return checks


def _agent_skills(library: AgentSkillLibrary) -> list[Check]:
    """The ``SKILL.md`` skills: how many loaded, and one line per folder that did not (it costs only itself)."""
    checks = [
        Check(f"SKILL.md {problem.name}", WARN, problem.error[:400], f"fix its front matter or remove {problem.folder}")
        for problem in library.errors
    ]
    if library.skills:
        checks.insert(0, Check("SKILL.md skills", OK, f"{len(library.skills)} loaded: {', '.join(library.skills)}"))
    return checks


class _LoadError(Protocol):
    name: str
    error: str


def _loaded(kind: str, errors: Sequence[_LoadError], loaded: str) -> Check:
    """One kind of plugin: what failed to load (the list command shows each error), else how many loaded."""
    if errors:
        return Check(
            kind, FAIL, "; ".join(f"{e.name}: {e.error}" for e in errors)[:400], f"`{CLI} {kind} list` shows each error"
        )
    return Check(kind, OK, loaded)
