"""The two skills the model calls for ``SKILL.md`` skills: ``skill_doc`` reads one skill's instructions
(or a file they reference), ``run_script`` runs one of its scripts under the gate (capability ``exec``;
the owner's rule for that skill, ``policy.skills.<name>``, decides, else ``policy.capabilities.exec``).

What ``skill_doc`` returns is the skill author's text, labelled so: the model reads how to do a task, and
nothing in it changes what the gate allows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from assistant_framework.agentskills.library import AgentSkillLibrary
from assistant_framework.agentskills.scripts import run_script
from assistant_framework.json_types import JsonSchema
from assistant_framework.skills.loader import Skill
from assistant_framework.skills.spec import SkillArgs, SkillContext
from assistant_framework.workspace import Workspace

SKILL_DOC = "skill_doc"
RUN_SCRIPT = "run_script"
#: Seconds between the script's limit and the manager's own timeout of the call, so the script is ended
#: (its process group) and the model gets the sentence, not the manager's "timed out".
LIMIT_MARGIN_SECONDS = 1.0
#: The label before a body: whose words these are.
AUTHOR_LABEL = "[Instructions of skill {name!r}, written by its author (not the owner): how to do the task]"

DOC_SCHEMA: JsonSchema = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "the skill's name from [Skills]"},
        "file": {"type": "string", "description": "optional: a file the instructions mention"},
    },
    "required": ["name"],
    "additionalProperties": False,
}
SCRIPT_SCHEMA: JsonSchema = {
    "type": "object",
    "properties": {
        "skill": {"type": "string"},
        "script": {"type": "string", "description": "a file in the skill's scripts/"},
        "args": {"type": "array", "items": {"type": "string"}},
        "cwd": {"type": "string", "enum": ["skill", "workspace"]},
    },
    "required": ["skill", "script"],
    "additionalProperties": False,
}


def _record(name: str, description: str, schema: JsonSchema, run: Callable[..., object], **extra: Any) -> Skill:
    return Skill(
        name=name,
        description=description,
        args_schema=schema,
        run=run,
        folder=None,
        source_path=None,
        readme_path=None,
        help_text="",
        schema_source="module",
        wants_context=True,
        module_name="",
        origin="SKILL.md skills (assistant_framework/agentskills)",
        **extra,
    )


def agent_skill_tools(library: AgentSkillLibrary, timeout: Callable[[str], float]) -> list[Skill]:
    """``skill_doc`` and ``run_script`` over ``library``; ``timeout(name)`` is the manager's for a call."""

    def doc(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> str:
        name = str(args.get("name", "")).strip()
        text = library.doc(name, args.get("file") or None)
        skill = library.get(name)
        assert skill is not None  # doc() raised otherwise
        lines = [AUTHOR_LABEL.format(name=name), text]
        if not args.get("file") and skill.scripts:
            lines.append(f"Scripts (run with {RUN_SCRIPT}): {', '.join(skill.scripts)}")
        return "\n".join(lines)

    def script(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> str:
        name = str(args.get("skill", "")).strip()
        skill = library.get(name)
        if skill is None:
            raise ValueError(f"there is no SKILL.md skill named {name!r}; the skills are: {', '.join(library.skills)}")
        cwd = workspace.root if args.get("cwd") == "workspace" else skill.folder
        limit = max(timeout(RUN_SCRIPT) - LIMIT_MARGIN_SECONDS, 0.5)
        done = run_script(
            skill,
            str(args.get("script", "")),
            [str(a) for a in args.get("args") or []],
            cwd=cwd,
            workspace_root=workspace.root,
            limit_seconds=limit,
        )
        cut = f"\n[... {done.cut_bytes} more bytes of output not shown]" if done.cut_bytes else ""
        return f"exit code {done.exit_code}\n{done.output.rstrip()}{cut}"

    def script_rule(args: SkillArgs) -> str:
        # The owner allows a skill's scripts by the skill's name: policy.skills.<name>.
        return str(args.get("skill", "")).strip() if isinstance(args, dict) else RUN_SCRIPT

    return [
        _record(
            SKILL_DOC,
            "Read the instructions of a skill listed in [Skills] before doing its task (file: a file they mention).",
            DOC_SCHEMA,
            doc,
            capabilities=["read"],
            timeout_seconds=None,
            outside=False,
        ),
        _record(
            RUN_SCRIPT,
            "Run a script of a skill in [Skills] (a file in its scripts/) with arguments; the owner is asked first.",
            SCRIPT_SCHEMA,
            script,
            capabilities=["exec"],
            timeout_seconds=30.0,
            outside=True,
            policy_name=script_rule,
        ),
    ]
